// expect_error<E>(f, fragments): runs `f` and expects an exception of type E whose message
// contains every fragment.
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <initializer_list>
#include <string>

namespace streamfuse::testing {

template <class E, class F>
void expect_error(F&& f, std::initializer_list<const char*> fragments) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected one mentioning " << *fragments.begin();
  } catch (const E& e) {
    const std::string what = e.what();
    for (const char* frag : fragments)
      EXPECT_NE(what.find(frag), std::string::npos) << "'" << frag << "' missing from: " << what;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

}  // namespace streamfuse::testing
