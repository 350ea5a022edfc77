// Conversions between float and the 16-bit float formats (IEEE binary16, bfloat16), round to
// nearest even. Branch-free so loops over them vectorize; used by every backend's host code and
// by the public Half and BFloat16 types.
#pragma once

#include <bit>
#include <cstdint>

namespace streamfuse::backends {

inline float half_bits_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t em = h & 0x7fffu;
  // Normals: move exponent and mantissa into a float's fields and rebias the exponent by
  // 127 - 15. Subnormals (and zero): mantissa * 2^-24, computed from an integer so that no
  // denormal float operand takes the slow microcode path. Inf and NaN keep their payload.
  const std::uint32_t normal = (em << 13) + 0x38000000u;
  const std::uint32_t subnormal = std::bit_cast<std::uint32_t>(static_cast<float>(em) * 0x1p-24f);
  const std::uint32_t special = 0x7f800000u | (em << 13);
  const std::uint32_t bits = em >= 0x7c00u ? special : em >= 0x0400u ? normal : subnormal;
  return std::bit_cast<float>(bits | sign);
}

inline std::uint16_t float_to_half_bits(float x) {
  std::uint32_t f = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t sign = f & 0x80000000u;
  f ^= sign;
  std::uint32_t out;
  if (f >= 0x47800000u) {  // >= 2^16 (or inf, NaN): overflow to inf, NaN stays quiet NaN
    out = f > 0x7f800000u ? 0x7e00u : 0x7c00u;
  } else if (f < 0x38800000u) {  // below 2^-14: half subnormal or zero
    // Adding 0.5 aligns the value to the subnormal grid; the FPU rounds to nearest even.
    const float aligned = std::bit_cast<float>(f) + 0.5f;
    out = std::bit_cast<std::uint32_t>(aligned) - 0x3f000000u;
  } else {
    const std::uint32_t mant_odd = (f >> 13) & 1u;
    f += 0xc8000000u + 0xfffu;  // rebias exponent (15 - 127) << 23, and round half up ...
    f += mant_odd;              // ... or half to even
    out = f >> 13;              // a carry into exponent 31 gives inf, as it should
  }
  return static_cast<std::uint16_t>(out | (sign >> 16));
}

inline float bf16_bits_to_float(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

inline std::uint16_t float_to_bf16_bits(float x) {
  const std::uint32_t f = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t rounded = (f + 0x7fffu + ((f >> 16) & 1u)) >> 16;
  const std::uint32_t quiet_nan = (f >> 16) | 0x40u;
  const bool is_nan = (f & 0x7fffffffu) > 0x7f800000u;
  return static_cast<std::uint16_t>(is_nan ? quiet_nan : rounded);
}

}  // namespace streamfuse::backends
