// What each element-wise op computes, per compute type, for the eager kernels and the fused
// interpreter. Everything beyond one IEEE operation is a function of scalar_ops.h or
// vector_math.h, which the JIT's generated code calls by the same names (jit/cpp_codegen.cpp
// holds the matching switch): fused and unfused results agree bit for bit.
#pragma once

#include <cstdint>
#include <type_traits>

#include "backends/cpu/kernels/convert.h"
#include "backends/cpu/vector_math.h"
#include "core/scalar_ops.h"
#include "core/ir.h"

namespace streamfuse::backends::cpu::ops {

using core::OpKind;

// scalar_ops.h overloads on int and long long; std::int64_t is long here, a third type.
template <class C>
using sf_t = std::conditional_t<std::is_same_v<C, std::int64_t>, long long, C>;
template <class C>
inline sf_t<C> sf(C x) {
  return static_cast<sf_t<C>>(x);
}

template <core::OpKind K, class C>
inline C unary(C x) {
  if constexpr (std::is_same_v<C, float>) {
    if constexpr (K == core::OpKind::kNeg)
      return -x;
    else if constexpr (K == core::OpKind::kAbs)
      return sf_abs(x);
    else if constexpr (K == core::OpKind::kExp)
      return sf_exp(x);
    else if constexpr (K == core::OpKind::kLog)
      return sf_log(x);
    else if constexpr (K == core::OpKind::kSqrt)
      return sf_sqrt(x);
    else if constexpr (K == core::OpKind::kRsqrt)
      return sf_rsqrt(x);
    else if constexpr (K == core::OpKind::kRecip)
      return sf_recip(x);
    else if constexpr (K == core::OpKind::kSin)
      return sf_sin(x);
    else if constexpr (K == core::OpKind::kCos)
      return sf_cos(x);
    else if constexpr (K == core::OpKind::kTanh)
      return sf_tanh(x);
    else if constexpr (K == core::OpKind::kErf)
      return sf_erf(x);
    else if constexpr (K == core::OpKind::kSigmoid)
      return sf_sigmoid(x);
    else if constexpr (K == core::OpKind::kRelu)
      return sf_relu(x);
    else
      static_assert(K == core::OpKind::kNeg, "not a float unary op");
  } else {
    if constexpr (K == core::OpKind::kNeg)
      return static_cast<C>(sf_neg(sf(x)));
    else if constexpr (K == core::OpKind::kAbs)
      return static_cast<C>(sf_abs(sf(x)));
    else if constexpr (K == core::OpKind::kRelu)
      return static_cast<C>(sf_relu(sf(x)));
    else
      static_assert(K == core::OpKind::kNeg, "not an integer unary op");
  }
}

template <core::OpKind K, class C>
inline C binary(C a, C b) {
  if constexpr (std::is_same_v<C, float>) {
    if constexpr (K == core::OpKind::kAdd)
      return a + b;
    else if constexpr (K == core::OpKind::kSub)
      return a - b;
    else if constexpr (K == core::OpKind::kMul)
      return a * b;
    else if constexpr (K == core::OpKind::kDiv)
      return a / b;
    else if constexpr (K == core::OpKind::kPow)
      return sf_pow(a, b);
    else if constexpr (K == core::OpKind::kMaximum)
      return sf_max(a, b);
    else if constexpr (K == core::OpKind::kMinimum)
      return sf_min(a, b);
    else
      static_assert(K == core::OpKind::kAdd, "not a float binary op");
  } else if constexpr (std::is_same_v<C, BoolStorage>) {
    if constexpr (K == core::OpKind::kMaximum)
      return sf_max(a, b);
    else if constexpr (K == core::OpKind::kMinimum)
      return sf_min(a, b);
    else
      static_assert(K == core::OpKind::kMaximum, "not a bool binary op");
  } else {
    if constexpr (K == core::OpKind::kAdd)
      return static_cast<C>(sf_add(sf(a), sf(b)));
    else if constexpr (K == core::OpKind::kSub)
      return static_cast<C>(sf_sub(sf(a), sf(b)));
    else if constexpr (K == core::OpKind::kMul)
      return static_cast<C>(sf_mul(sf(a), sf(b)));
    else if constexpr (K == core::OpKind::kPow)
      return static_cast<C>(sf_ipow(sf(a), sf(b)));
    else if constexpr (K == core::OpKind::kMaximum)
      return static_cast<C>(sf_max(sf(a), sf(b)));
    else if constexpr (K == core::OpKind::kMinimum)
      return static_cast<C>(sf_min(sf(a), sf(b)));
    else
      static_assert(K == core::OpKind::kAdd, "not an integer binary op");
  }
}

template <core::OpKind K, class C>
inline BoolStorage compare(C a, C b) {
  if constexpr (K == core::OpKind::kEq)
    return a == b;
  else if constexpr (K == core::OpKind::kNe)
    return a != b;
  else if constexpr (K == core::OpKind::kLt)
    return a < b;
  else if constexpr (K == core::OpKind::kLe)
    return a <= b;
  else if constexpr (K == core::OpKind::kGt)
    return a > b;
  else if constexpr (K == core::OpKind::kGe)
    return a >= b;
  else
    static_assert(K == core::OpKind::kEq, "not a comparison");
}

// Logical ops read their operands as bool (0 or 1).
template <core::OpKind K>
inline BoolStorage logical(BoolStorage a, BoolStorage b) {
  if constexpr (K == core::OpKind::kLogicalAnd)
    return a & b;
  else if constexpr (K == core::OpKind::kLogicalOr)
    return a | b;
  else
    return a ^ 1;  // LogicalNot
}

}  // namespace streamfuse::backends::cpu::ops
