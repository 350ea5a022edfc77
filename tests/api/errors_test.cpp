// Every error path: the exception type, that it is raised at the call that caused it, and that
// its message names the op, the operands' shapes and dtypes, and a fix.
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include <streamfuse/streamfuse.h>

#include "tests/expect_error.h"

namespace sf = streamfuse;
using streamfuse::testing::expect_error;

namespace {

TEST(ErrorsTest, BroadcastMismatchNamesOpShapesAndDtypes) {
  const sf::Tensor a = sf::ones({2, 3}), b = sf::ones({4}, sf::kF16);
  expect_error<sf::ShapeError>([&] { return a + b; },
                               {"add", "[2, 3] f32", "[4] f16", "broadcast"});
  expect_error<sf::ShapeError>([&] { return sf::where(a > 0, a, b); }, {"where", "[4] f16"});
  expect_error<sf::ShapeError>([&] { return a < b; }, {"lt"});
}

TEST(ErrorsTest, DtypeRules) {
  const sf::Tensor b = sf::ones({2}, sf::kBool), f = sf::ones({2});
  expect_error<sf::DTypeError>([&] { return b + b; }, {"add", "bool", "logical_or"});
  expect_error<sf::DTypeError>([&] { return -b; }, {"neg", "bool", "logical_not"});
  expect_error<sf::DTypeError>([&] { return sf::where(f, f, f); }, {"where", "condition", "bool"});
  expect_error<sf::DTypeError>([&] { return sf::matmul(b, f); }, {"matmul", "bool"});
  expect_error<sf::DTypeError>([&] { return sf::randn({2}, sf::kI64); }, {"randn", "float", "i64"});
}

TEST(ErrorsTest, ReadingAsTheWrongTypeIsRefused) {
  const sf::Tensor b = sf::ones({2}, sf::kBool);
  expect_error<sf::DTypeError>([&] { return b.to_vector<float>(); },
                               {"to_vector", "bool", "f32", ".to("});
  expect_error<sf::DTypeError>([&] { return sf::ones({1}).item<std::int32_t>(); },
                               {"item", "f32", "i32"});
  expect_error<sf::ShapeError>([&] { return sf::ones({3}).item<float>(); },
                               {"item", "[3]", "exactly one"});
  std::vector<float> dst(2);
  expect_error<sf::ShapeError>([&] { sf::ones({3}).copy_to(dst.data(), dst.size()); },
                               {"copy_to", "[3]"});
}

TEST(ErrorsTest, AxesOutOfRange) {
  const sf::Tensor x = sf::ones({2, 3});
  expect_error<sf::ShapeError>([&] { return sf::sum(x, 2); },
                               {"sum", "axis 2", "[2, 3] f32", "-2 to 1"});
  expect_error<sf::ShapeError>([&] { return sf::argmax(x, -3); }, {"argmax", "axis -3"});
  expect_error<sf::ShapeError>([&] { return x.size(5); }, {"size", "axis 5"});
  expect_error<sf::ShapeError>([&] { return x.transpose(0, 2); }, {"transpose", "axis 2"});
  expect_error<sf::ShapeError>([&] { return sf::nn::softmax(x, 3); }, {"softmax", "axis 3"});
  expect_error<sf::ShapeError>([&] { return sf::squeeze(x, 0); }, {"squeeze", "size 2, not 1"});
  expect_error<sf::ShapeError>([&] { return sf::unsqueeze(x, 4); }, {"unsqueeze", "axis 4"});
}

TEST(ErrorsTest, EmptyExtremaAreUndefined) {
  expect_error<sf::ShapeError>([] { return sf::max(sf::zeros({0})); }, {"max", "zero elements"});
  expect_error<sf::ShapeError>(
      [] {
        return sf::argmax(sf::zeros({2, 0}), 1);
      },
      {"argmax", "axis 1"});
}

TEST(ErrorsTest, MovementOps) {
  const sf::Tensor x = sf::ones({2, 3});
  expect_error<sf::ShapeError>(
      [&] {
        return x.reshape({4, 2});
      },
      {"reshape", "6 elements", "[4, 2]"});
  expect_error<sf::ShapeError>([&] { return x.reshape({-1, -1}); }, {"reshape", "one -1"});
  expect_error<sf::ShapeError>([&] { return x.reshape({-1, 4}); }, {"reshape", "infer"});
  expect_error<sf::ShapeError>(
      [&] {
        return x.permute({0, 0});
      },
      {"permute", "(0, 0)", "permutation"});
  expect_error<sf::ShapeError>([&] { return x.permute({0}); }, {"permute"});
  expect_error<sf::ShapeError>([&] { return x.expand({2, 4}); }, {"expand", "only size-1"});
  expect_error<sf::ShapeError>([&] { return x.expand({3}); }, {"expand", "fewer dimensions"});
  expect_error<sf::ShapeError>([&] { return x.slice(1, 0, 4); }, {"slice", "stop 4", "size 3"});
  expect_error<sf::ShapeError>([&] { return x.slice(1, -4, 2); }, {"slice", "start -4"});
  expect_error<sf::ShapeError>([&] { return x.slice(0, 0, 2, 0); },
                               {"slice", "step must be positive"});
  expect_error<sf::ShapeError>(
      [&] {
        return sf::cat({x, sf::ones({2, 2})}, 0);
      },
      {"cat", "differ", "axis 0"});
  expect_error<sf::ShapeError>([&] { return sf::cat(std::vector<sf::Tensor>{}); },
                               {"cat", "at least one"});
}

TEST(ErrorsTest, MatmulShapes) {
  expect_error<sf::ShapeError>(
      [] {
        return sf::matmul(sf::ones({2, 3}), sf::ones({4, 2}));
      },
      {"matmul", "inner dimensions", "3 vs 4"});
  expect_error<sf::ShapeError>(
      [] {
        return sf::matmul(sf::ones({2, 2, 3}), sf::ones({3, 3, 1}));
      },
      {"matmul", "batch", "2 vs 3"});
  expect_error<sf::ShapeError>([] { return sf::matmul(sf::full({}, 1.0f), sf::ones({1})); },
                               {"matmul", "at least one dimension"});
}

TEST(ErrorsTest, NewShapes) {
  expect_error<sf::ShapeError>([] { return sf::zeros({2, -1}); }, {"zeros", "negative"});
  expect_error<sf::ShapeError>([] { return sf::Shape{1, 1, 1, 1, 1, 1, 1, 1, 1}; },
                               {"9 dimensions", "at most 8"});
  expect_error<sf::ShapeError>([] { return sf::zeros({1LL << 40, 1LL << 40}); }, {"too large"});
  expect_error<sf::Error>([] { return sf::from_blob(static_cast<const float*>(nullptr), {2}); },
                          {"null"});
  expect_error<sf::Error>([] { return sf::arange(0, 1, 0); }, {"arange", "step"});
}

// Runs `f`, expects an exception of type E whose message starts with "<call>: " (the call the
// test made, not an op it is made of) and contains every fragment.
template <class E, class F>
void expect_error_of(const std::string& call, F&& f, std::initializer_list<const char*> fragments) {
  try {
    f();
    ADD_FAILURE() << "no exception from " << call;
  } catch (const E& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind(call + ": ", 0), 0u) << "does not start with '" << call << ": ': " << what;
    for (const char* frag : fragments)
      EXPECT_NE(what.find(frag), std::string::npos) << "'" << frag << "' missing from: " << what;
  } catch (const std::exception& e) {
    ADD_FAILURE() << call << ": wrong exception type: " << e.what();
  }
}

// Functions made of other API ops name the call the user wrote, then the op that failed.
TEST(ErrorsTest, CompositesNameTheCallTheUserWrote) {
  const sf::Tensor x = sf::ones({2, 3}), i = sf::ones({2, 3}, sf::kI64);
  expect_error_of<sf::ShapeError>("softmax", [&] { return sf::nn::softmax(x, 5); },
                                  {"axis 5 is out of range", "[2, 3] f32", "-2 to 1"});
  expect_error_of<sf::ShapeError>("zeros",
                                  [] {
                                    return sf::zeros({2, -1});
                                  },
                                  {"[2, -1] has a negative size", "(in its full step)"});
  expect_error_of<sf::ShapeError>("ones", [] { return sf::ones({-3}); }, {"negative"});
  expect_error_of<sf::DTypeError>("rand_like", [&] { return sf::rand_like(i); },
                                  {"float dtype", "i64", "(in its rand step)"});
  expect_error_of<sf::DTypeError>("randn_like", [&] { return sf::randn_like(i); }, {"i64"});
  expect_error_of<sf::ShapeError>("clamp",
                                  [&] { return sf::clamp(x, sf::ones({4}), sf::full({}, 1.0f)); },
                                  {"[2, 3] f32 and [4] f32", "broadcast", "(in its maximum step)"});
  expect_error_of<sf::DTypeError>(
      "gelu",
      [] { return sf::nn::gelu(sf::ones({2}, sf::kBool), sf::nn::GeluApproximation::kTanh); },
      {"bool", "(in its mul step)"});
  expect_error_of<sf::ShapeError>("from_vector",
                                  [] {
                                    return sf::from_vector(std::vector<float>{}, sf::Shape{0, -1});
                                  },
                                  {"negative", "(in its from_blob step)"});
  // Their own checks, and a composite whose step has its name, are not renamed.
  expect_error_of<sf::ShapeError>("layer_norm", [&] { return sf::nn::layer_norm(x, {2}); },
                                  {"trailing"});
  expect_error_of<sf::ShapeError>("rms_norm", [&] { return sf::nn::rms_norm(x, {2}); },
                                  {"trailing", "[2, 3] f32"});
  expect_error_of<sf::ShapeError>("rms_norm",
                                  [&] { return sf::nn::rms_norm(x, {3}, sf::ones({2})); },
                                  {"weight must have shape [3]", "[2] f32"});
  expect_error_of<sf::ShapeError>(
      "layer_norm", [&] { return sf::nn::layer_norm(x, {3}, sf::ones({3}), sf::ones({4})); },
      {"bias must have shape [3]", "[4] f32"});
  expect_error_of<sf::ShapeError>("layer_norm",
                                  [&] { return sf::nn::layer_norm(x, {3}, sf::ones({4})); },
                                  {"weight must have shape [3]", "[4] f32"});
  expect_error_of<sf::ShapeError>("log_softmax", [&] { return sf::nn::log_softmax(x, 2); },
                                  {"axis 2 is out of range"});
  expect_error_of<sf::ShapeError>("squeeze", [&] { return sf::squeeze(x, 1); }, {"not 1"});
  expect_error_of<sf::ShapeError>("where", [&] { return sf::where(x > 0, sf::ones({4}), 0.0f); },
                                  {"broadcast"});
  // Every nn function and composite names itself for an undefined operand.
  const sf::Tensor u;
  expect_error_of<sf::Error>("silu", [&] { return sf::nn::silu(u); }, {"undefined"});
  expect_error_of<sf::Error>("rms_norm", [&] { return sf::nn::rms_norm(u, {3}); }, {"undefined"});
  expect_error_of<sf::Error>("log_softmax", [&] { return sf::nn::log_softmax(u); }, {"undefined"});
  expect_error_of<sf::Error>("transpose", [&] { return sf::transpose(u, 0, 1); }, {"undefined"});
  expect_error_of<sf::Error>("flatten", [&] { return sf::flatten(u); }, {"undefined"});
  expect_error_of<sf::Error>("zeros_like", [&] { return sf::zeros_like(u); }, {"undefined"});
  expect_error_of<sf::Error>("numel", [&] { return u.numel(); }, {"undefined"});
  expect_error_of<sf::Error>("rank", [&] { return u.rank(); }, {"undefined"});
  expect_error_of<sf::Error>("size", [&] { return u.size(0); }, {"undefined"});
}

TEST(ErrorsTest, UndefinedTensors) {
  const sf::Tensor u;
  expect_error<sf::Error>([&] { return u + 1; }, {"add", "undefined"});
  expect_error<sf::Error>([&] { return u.shape(); }, {"undefined"});
  expect_error<sf::Error>([&] { return u.to_vector<float>(); }, {"to_vector", "undefined"});
}

// Without a driver (or in a build without the CUDA backend), each says why and what to do.
TEST(ErrorsTest, CudaDevicesWithoutADriver) {
  if (std::getenv("STREAMFUSE_CUDA_DRIVER")) GTEST_SKIP() << "a driver is named here";
  try {
    sf::synchronize(sf::Device::cuda(0));
    GTEST_SKIP() << "this machine has a GPU";
  } catch (const sf::DeviceError&) {
  }
  expect_error<sf::DeviceError>([] { return sf::zeros({2}, sf::kF32, sf::Device::cuda(0)); },
                                {"cuda:0", "Device::cpu()"});
  expect_error<sf::DeviceError>([] { return sf::ones({2}).to(sf::Device::cuda(0)); }, {"cuda:0"});
  expect_error<sf::DeviceError>([] { return sf::zeros({2}, sf::kF32, sf::Device::cuda(99)); },
                                {"no such device"});
  EXPECT_EQ(sf::ones({2}).to(sf::Device::cpu()).device(), sf::Device::cpu());
}

TEST(ErrorsTest, FailuresInsideKernelsSurfaceWhenTheResultIsRead) {
  // Valid at the call (the shape is addressable), impossible when it runs: the op records, and
  // reading the result (or anything computed from it) raises the cause, naming the op.
  const sf::Tensor huge = sf::zeros({std::int64_t{1} << 42});
  const sf::Tensor derived = sf::sum(huge + 1.0f);
  expect_error<sf::Error>([&] { return derived.item<float>(); }, {"out of memory", "full"});
  expect_error<sf::Error>([&] { return sf::max(huge).item<float>(); }, {"out of memory"});
  // Printing reads the value: the error names the print, then the read.
  expect_error_of<sf::Error>("operator<<",
                             [&] {
                               std::ostringstream os;
                               os << derived;
                             },
                             {"out of memory", "(in its to_vector step)"});
  // Nothing else is lost: other tensors still compute.
  EXPECT_EQ(sf::sum(sf::ones({4})).item<float>(), 4.0f);
}

}  // namespace
