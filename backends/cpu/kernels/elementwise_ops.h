// What each element-wise op computes, per compute type. The fused interpreter and the JIT's
// generated code use these same definitions, so fused and unfused results agree bit for bit.
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>

#include "backends/cpu/kernels/convert.h"
#include "backends/cpu/vector_math.h"
#include "stream/ir.h"

namespace streamfuse::backends::cpu::ops {

using stream::OpKind;

// Integer arithmetic wraps (computed unsigned: signed overflow is undefined in C++).
template <class I>
inline I wrap_add(I a, I b) {
  using U = std::make_unsigned_t<I>;
  return static_cast<I>(static_cast<U>(a) + static_cast<U>(b));
}
template <class I>
inline I wrap_sub(I a, I b) {
  using U = std::make_unsigned_t<I>;
  return static_cast<I>(static_cast<U>(a) - static_cast<U>(b));
}
template <class I>
inline I wrap_mul(I a, I b) {
  using U = std::make_unsigned_t<I>;
  return static_cast<I>(static_cast<U>(a) * static_cast<U>(b));
}

// Integer power by squaring, wrapping. A negative exponent gives the truncated reciprocal:
// 1 for base 1, +-1 for base -1, 0 otherwise (0 for base 0 too, rather than a division trap).
template <class I>
inline I int_pow(I base, I exp) {
  if (exp < 0) return base == 1 ? I{1} : base == -1 ? ((exp & 1) ? I{-1} : I{1}) : I{0};
  I result = 1;
  while (exp) {
    if (exp & 1) result = wrap_mul(result, base);
    base = wrap_mul(base, base);
    exp >>= 1;
  }
  return result;
}

// max/min with NaN winning; for equal values (+0 and -0) max prefers +0 and min -0, so the result
// does not depend on operand order.
inline float fmax_nan(float a, float b) {
  const float m = a > b ? a : b;
  const float eq =
      std::bit_cast<float>(std::bit_cast<std::uint32_t>(a) & std::bit_cast<std::uint32_t>(b));
  const float r = a == b ? eq : m;
  return a != a ? a : (b != b ? b : r);
}
inline float fmin_nan(float a, float b) {
  const float m = a < b ? a : b;
  const float eq =
      std::bit_cast<float>(std::bit_cast<std::uint32_t>(a) | std::bit_cast<std::uint32_t>(b));
  const float r = a == b ? eq : m;
  return a != a ? a : (b != b ? b : r);
}

template <OpKind K, class C>
inline C unary(C x) {
  if constexpr (std::is_same_v<C, float>) {
    if constexpr (K == OpKind::kNeg)
      return -x;
    else if constexpr (K == OpKind::kAbs)
      return std::bit_cast<float>(std::bit_cast<std::uint32_t>(x) & 0x7fffffffu);
    else if constexpr (K == OpKind::kExp)
      return sf_exp(x);
    else if constexpr (K == OpKind::kLog)
      return sf_log(x);
    else if constexpr (K == OpKind::kSqrt)
      return __builtin_sqrtf(x);
    else if constexpr (K == OpKind::kRsqrt)
      return 1.0f / __builtin_sqrtf(x);
    else if constexpr (K == OpKind::kRecip)
      return 1.0f / x;
    else if constexpr (K == OpKind::kSin)
      return sf_sin(x);
    else if constexpr (K == OpKind::kCos)
      return sf_cos(x);
    else if constexpr (K == OpKind::kTanh)
      return sf_tanh(x);
    else if constexpr (K == OpKind::kErf)
      return sf_erf(x);
    else if constexpr (K == OpKind::kSigmoid)
      return sf_sigmoid(x);
    else if constexpr (K == OpKind::kRelu)
      return x <= 0.0f ? 0.0f : x;  // NaN stays NaN
    else
      static_assert(K == OpKind::kNeg, "not a float unary op");
  } else {
    if constexpr (K == OpKind::kNeg)
      return wrap_sub(C{0}, x);
    else if constexpr (K == OpKind::kAbs)
      return x < 0 ? wrap_sub(C{0}, x) : x;
    else if constexpr (K == OpKind::kRelu)
      return x < 0 ? C{0} : x;
    else
      static_assert(K == OpKind::kNeg, "not an integer unary op");
  }
}

template <OpKind K, class C>
inline C binary(C a, C b) {
  if constexpr (std::is_same_v<C, float>) {
    if constexpr (K == OpKind::kAdd)
      return a + b;
    else if constexpr (K == OpKind::kSub)
      return a - b;
    else if constexpr (K == OpKind::kMul)
      return a * b;
    else if constexpr (K == OpKind::kDiv)
      return a / b;
    else if constexpr (K == OpKind::kPow)
      return sf_pow(a, b);
    else if constexpr (K == OpKind::kMaximum)
      return fmax_nan(a, b);
    else if constexpr (K == OpKind::kMinimum)
      return fmin_nan(a, b);
    else
      static_assert(K == OpKind::kAdd, "not a float binary op");
  } else if constexpr (std::is_same_v<C, BoolStorage>) {
    if constexpr (K == OpKind::kMaximum)
      return a | b;
    else if constexpr (K == OpKind::kMinimum)
      return a & b;
    else
      static_assert(K == OpKind::kMaximum, "not a bool binary op");
  } else {
    if constexpr (K == OpKind::kAdd)
      return wrap_add(a, b);
    else if constexpr (K == OpKind::kSub)
      return wrap_sub(a, b);
    else if constexpr (K == OpKind::kMul)
      return wrap_mul(a, b);
    else if constexpr (K == OpKind::kPow)
      return int_pow(a, b);
    else if constexpr (K == OpKind::kMaximum)
      return a > b ? a : b;
    else if constexpr (K == OpKind::kMinimum)
      return a < b ? a : b;
    else
      static_assert(K == OpKind::kAdd, "not an integer binary op");
  }
}

template <OpKind K, class C>
inline BoolStorage compare(C a, C b) {
  if constexpr (K == OpKind::kEq)
    return a == b;
  else if constexpr (K == OpKind::kNe)
    return a != b;
  else if constexpr (K == OpKind::kLt)
    return a < b;
  else if constexpr (K == OpKind::kLe)
    return a <= b;
  else if constexpr (K == OpKind::kGt)
    return a > b;
  else if constexpr (K == OpKind::kGe)
    return a >= b;
  else
    static_assert(K == OpKind::kEq, "not a comparison");
}

// Logical ops read their operands as bool (0 or 1).
template <OpKind K>
inline BoolStorage logical(BoolStorage a, BoolStorage b) {
  if constexpr (K == OpKind::kLogicalAnd)
    return a & b;
  else if constexpr (K == OpKind::kLogicalOr)
    return a | b;
  else
    return a ^ 1;  // LogicalNot
}

}  // namespace streamfuse::backends::cpu::ops
