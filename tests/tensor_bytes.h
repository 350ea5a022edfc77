// bytes_of(t): the bytes of a tensor's elements in row-major order (a sync point), for tests
// that compare values bit for bit whatever the dtype.
#pragma once

#include <cstdint>
#include <vector>

#include <streamfuse/streamfuse.h>

namespace streamfuse::testing {

inline std::vector<unsigned char> bytes_of(const Tensor& t) {
  std::vector<unsigned char> out;
  auto append = [&](const auto& v) {
    const auto* p = reinterpret_cast<const unsigned char*>(v.data());
    out.insert(out.end(), p, p + v.size() * sizeof(v[0]));
  };
  switch (t.dtype()) {
    case kF32:
      append(t.to_vector<float>());
      break;
    case kF16:
      append(t.to_vector<Half>());
      break;
    case kBF16:
      append(t.to_vector<BFloat16>());
      break;
    case kI32:
      append(t.to_vector<std::int32_t>());
      break;
    case kI64:
      append(t.to_vector<std::int64_t>());
      break;
    case kBool:
      for (bool b : t.to_vector<bool>()) out.push_back(b);
      break;
    case kI8:
      append(t.to_vector<std::int8_t>());
      break;
    case kU8:
      append(t.to_vector<std::uint8_t>());
      break;
    case kF64:
      append(t.to_vector<double>());
      break;
  }
  return out;
}

}  // namespace streamfuse::testing
