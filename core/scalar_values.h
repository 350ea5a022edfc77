// How a Scalar becomes a value inside a kernel, for every backend and the JIT. Two uses differ:
// the scalar operand of an op is used at compute precision (x_f16 * 0.1 multiplies by the float
// 0.1, as PyTorch does), while full(shape, s, dtype) stores s in dtype.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/scalar_ops.h"
#include "streamfuse/dtype.h"

namespace streamfuse::core {

// The value of `s` as an operand computed in `compute` (f32, i32, i64, bool or f64): the 64 bits
// a kernel reads (a float's bits in the low half; a double's bits; integers as themselves; bool 0
// or 1). An f64 op's operand is the scalar's double, unrounded (`x_f64 * 0.1`). An operand
// of an i8 or u8 op is an i32 (`u8 + 300` adds 300 in int and wraps the sum to u8: the value
// PyTorch's u8 + 300 gives, which wraps 300 first; `u8 < 300` compares exactly, true).
// The 64 bits of `d`, as a kernel reads an f64 scalar.
inline std::int64_t double_bits(double d) {
  std::int64_t bits;
  std::memcpy(&bits, &d, sizeof bits);
  return bits;
}

inline std::int64_t operand_scalar_bits(const Scalar& s, DType compute) {
  switch (compute) {
    case kI32:
      return static_cast<std::int32_t>(s.to_int());  // wraps, as integer narrowing does
    case kI64:
      return s.to_int();
    case kBool:
      return s.is_floating() ? s.to_double() != 0.0 : s.to_int() != 0;
    case kF64:
      return double_bits(s.to_double());
    default: {
      const float f = static_cast<float>(s.to_double());
      std::uint32_t bits;
      std::memcpy(&bits, &f, sizeof bits);
      return bits;
    }
  }
}

// The value full(shape, s, dtype) stores, widened to dtype's compute type as 64 bits (as above):
// floats through float, so f16/bf16 round once; integers from an integer scalar wrap, from a
// float scalar saturate; bool is != 0.
inline std::int64_t fill_scalar_bits(const Scalar& s, DType dtype) {
  switch (dtype) {
    case kBool:
      return operand_scalar_bits(s, kBool);
    case kI32:
      return s.is_floating() ? sf_float_to_i32(static_cast<float>(s.to_double()))
                             : static_cast<std::int32_t>(s.to_int());
    case kI64:
      return s.is_floating() ? sf_float_to_i64(static_cast<float>(s.to_double())) : s.to_int();
    case kI8:  // as a cast to i8 stores it (sf_float_to_i8), widened to the int it computes in
      return s.is_floating() ? sf_float_to_i8(static_cast<float>(s.to_double()))
                             : sf_wrap_i8(static_cast<std::int32_t>(s.to_int()));
    case kU8:
      return s.is_floating() ? sf_float_to_u8(static_cast<float>(s.to_double()))
                             : sf_wrap_u8(static_cast<std::int32_t>(s.to_int()));
    case kF64:  // the scalar's double (an integer converted to double)
      return double_bits(s.to_double());
    default: {
      float f = static_cast<float>(s.to_double());
      if (dtype == kF16) f = sf_round_f16(f);
      if (dtype == kBF16) f = sf_round_bf16(f);
      std::uint32_t bits;
      std::memcpy(&bits, &f, sizeof bits);
      return bits;
    }
  }
}

}  // namespace streamfuse::core
