// ScopedEnv: sets an environment variable for one scope and restores what was there (or its
// absence) afterwards. Tests that read STREAMFUSE_* variables use it.
#pragma once

#include <stdlib.h>

#include <optional>
#include <string>

namespace streamfuse::testing {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { old_ ? (void)setenv(name_, old_->c_str(), 1) : (void)unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace streamfuse::testing
