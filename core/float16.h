// Conversions between float and the 16-bit float formats (IEEE binary16, bfloat16), round to
// nearest even, for host code: the public Half and BFloat16 types and the CPU kernels. The
// definitions are the kernels' own (scalar_ops.h), so every path converts alike.
#pragma once

#include <cstdint>

#include "core/scalar_ops.h"

namespace streamfuse::core {

inline float half_bits_to_float(std::uint16_t h) { return sf_half_to_float(h); }
inline std::uint16_t float_to_half_bits(float x) { return sf_float_to_half(x); }
inline float bf16_bits_to_float(std::uint16_t b) { return sf_bf16_to_float(b); }
inline std::uint16_t float_to_bf16_bits(float x) { return sf_float_to_bf16(x); }

}  // namespace streamfuse::core
