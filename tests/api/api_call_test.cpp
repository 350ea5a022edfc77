// api_call: an error raised by a composite's steps names the composite (the outermost one when
// composites nest), keeps its type, and names the step that raised it; other errors pass through.
#include <gtest/gtest.h>

#include <new>
#include <string>

#include "api/api_call.h"
#include "streamfuse/error.h"

namespace sf = streamfuse;
using sf::api::api_call;

namespace {

template <class E, class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("wrong type: ") + e.what();
  }
  return "no exception";
}

TEST(ApiCallTest, NamesTheCallAndTheStepAndKeepsTheType) {
  EXPECT_EQ(message_of<sf::ShapeError>([] {
              api_call("softmax", []() -> int { throw sf::ShapeError("max: axis 5 is bad"); });
            }),
            "softmax: axis 5 is bad (in its max step)");
  EXPECT_EQ(message_of<sf::DTypeError>([] {
              api_call("gelu", []() -> int { throw sf::DTypeError("mul: bool operands"); });
            }),
            "gelu: bool operands (in its mul step)");
  EXPECT_EQ(message_of<sf::DeviceError>([] {
              api_call("clamp", []() -> int { throw sf::DeviceError("maximum: two devices"); });
            }),
            "clamp: two devices (in its maximum step)");
  EXPECT_EQ(message_of<sf::Error>([] {
              api_call("operator<<", []() -> int { throw sf::Error("to_vector<bool>: failed"); });
            }),
            "operator<<: failed (in its to_vector<bool> step)");
}

TEST(ApiCallTest, TheOutermostCallIsNamedWithTheInnermostStep) {
  const std::string what = message_of<sf::ShapeError>([] {
    api_call("zeros_like", [] {
      return api_call("zeros", []() -> int { throw sf::ShapeError("full: negative size"); });
    });
  });
  EXPECT_EQ(what, "zeros_like: negative size (in its full step)");
}

TEST(ApiCallTest, OtherErrorsPassThroughUnchanged) {
  // Its own check, and messages that do not start with an op's name.
  for (const char* what : {"layer_norm: bad weight", "cuda:0: no such device",
                           "STREAMFUSE_FUSION='x' is not valid: expected 1", "no colon here"}) {
    EXPECT_EQ(message_of<sf::Error>(
                  [&] { api_call("layer_norm", [&]() -> int { throw sf::Error(what); }); }),
              what);
  }
  // Not a streamfuse::Error: not touched at all.
  EXPECT_THROW(api_call("softmax", []() -> int { throw std::bad_alloc(); }), std::bad_alloc);
  // And without an error, the steps' result.
  EXPECT_EQ(api_call("ones", [] { return 7; }), 7);
}

}  // namespace
