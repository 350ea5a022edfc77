// Which accumulator of the reduction template (core/reduce_math.h) each reduction of each storage
// type uses: the eager kernel (reduce.cpp) and the fused interpreter (jit/) both take them from
// here, so they fold the same values the same way.
#pragma once

#include <type_traits>

#include "backends/cpu/kernels/convert.h"
#include "core/scalar_ops.h"

// Prelude text: it includes nothing and needs core/scalar_ops.h before it.
#include "core/reduce_math.h"

namespace streamfuse::backends::cpu::reduce_ops {

template <class S>
constexpr bool kFloatStorage =
    std::is_same_v<S, float> || std::is_same_v<S, Half> || std::is_same_v<S, BFloat16>;
// The prelude's integer value type of a storage type (std::int64_t is long here; i8 and u8 are
// read as int, the type the fused program holds them in).
template <class S>
using int_value_t = std::conditional_t<
    std::is_same_v<S, std::int64_t>, long long,
    std::conditional_t<std::is_same_v<S, std::int8_t> || std::is_same_v<S, U8Storage>, int, S>>;

// f64 has accumulators of its own (double values); the other float dtypes read as float.
template <class S>
constexpr bool kF64Storage = std::is_same_v<S, double>;

template <class S>
using SumOp = std::conditional_t<kF64Storage<S>, sf_sum_f64,
                                 std::conditional_t<kFloatStorage<S>, sf_sum_float, sf_sum_int>>;
template <class S, bool kMax>
using ExtremeOp = std::conditional_t<kF64Storage<S>, sf_extreme_f64<kMax>,
                                     std::conditional_t<kFloatStorage<S>, sf_extreme_float<kMax>,
                                                        sf_extreme_int<int_value_t<S>, kMax>>>;
template <class S>
using ArgmaxOp = std::conditional_t<
    kF64Storage<S>, sf_argmax_f64,
    std::conditional_t<kFloatStorage<S>, sf_argmax_float, sf_argmax_int<int_value_t<S>>>>;

// Element x read as Op's value type.
template <class Op, class S>
typename Op::value value_of(S x) {
  if constexpr (kFloatStorage<S>)
    return convert<float>(x);
  else
    return static_cast<typename Op::value>(x);
}

}  // namespace streamfuse::backends::cpu::reduce_ops
