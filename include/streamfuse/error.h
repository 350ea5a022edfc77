// The exceptions streamfuse throws. Every message names the op, its operands' shapes and dtypes,
// and what would fix the call.
#pragma once

#include <stdexcept>
#include <string>

namespace streamfuse {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Shapes that do not broadcast, bad axes, out-of-range slices, wrong element counts.
class ShapeError : public Error {
 public:
  using Error::Error;
};
// Unsupported or mismatched dtypes, reading a tensor as the wrong C++ type.
class DTypeError : public Error {
 public:
  using Error::Error;
};
// Operands on different devices, a device this build or machine does not have.
class DeviceError : public Error {
 public:
  using Error::Error;
};
// A kernel that failed to compile.
class CompileError : public Error {
 public:
  using Error::Error;
};
// A cache file or directory that cannot be used.
class CacheError : public Error {
 public:
  using Error::Error;
};

}  // namespace streamfuse
