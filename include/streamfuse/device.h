// Where a tensor lives.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

namespace streamfuse {

enum class DeviceType : std::uint8_t { kCpu, kCuda };

struct Device {
  DeviceType type = DeviceType::kCpu;
  int index = 0;

  static constexpr Device cpu() { return {DeviceType::kCpu, 0}; }
  // A CUDA device by ordinal. Constructing one always works; using it on a machine without a
  // driver or in a build without the CUDA backend throws DeviceError at that op.
  static constexpr Device cuda(int i = 0) { return {DeviceType::kCuda, i}; }

  bool is_cpu() const { return type == DeviceType::kCpu; }
  // "cpu", "cuda:0".
  std::string to_string() const;
  friend bool operator==(const Device&, const Device&) = default;
};

// Writes to_string(): "cpu", "cuda:0".
std::ostream& operator<<(std::ostream& os, const Device& d);

}  // namespace streamfuse
