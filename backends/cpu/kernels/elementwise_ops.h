// What each element-wise op computes, per compute type, for the eager kernels and the fused
// interpreter: the prelude's function of the op (core/op_math.h), which the JIT's generated code
// calls by the same name. There is no math here, only the dispatch from an OpKind to its
// function, so fused and unfused results agree bit for bit.
#pragma once

#include <cstdint>
#include <type_traits>

#include "backends/cpu/kernels/convert.h"
#include "core/ir.h"
#include "core/scalar_ops.h"
#include "core/vector_math.h"

// Kernel prelude text, which includes nothing: after the two it builds on.
#include "core/op_math.h"

namespace streamfuse::backends::cpu::ops {

using core::OpKind;

// Always inlined, as the prelude's functions are: a chunk loop must see the op's whole math to
// vectorize (one more inline level measurably stopped GCC 12 at erf, 30% slower unfused GELU).
#define SF_OP_INLINE inline __attribute__((always_inline))

// The prelude overloads on int and long long; std::int64_t is long here, a third type.
template <class C>
using sf_t = std::conditional_t<std::is_same_v<C, std::int64_t>, long long, C>;
template <class C>
SF_OP_INLINE sf_t<C> sf(C x) {
  return static_cast<sf_t<C>>(x);
}

// sf_op_<Kind>(args...) of op K. A kind with no element-wise function is never instantiated
// here (the kernel table has no loop for it).
template <core::OpKind K, class... A>
SF_OP_INLINE auto op_math(A... args) {
#define STREAMFUSE_X(name, api, category, arity) \
  if constexpr (K == core::OpKind::k##name)      \
    return sf_op_##name(args...);                \
  else
  STREAMFUSE_OP_KINDS(STREAMFUSE_X)
#undef STREAMFUSE_X
  static_assert(sizeof...(A) == 0, "no such op");
}

template <core::OpKind K, class C>
SF_OP_INLINE C unary(C x) {
  return static_cast<C>(op_math<K>(sf(x)));
}

template <core::OpKind K, class C>
SF_OP_INLINE C binary(C a, C b) {
  return static_cast<C>(op_math<K>(sf(a), sf(b)));
}

template <core::OpKind K, class C>
SF_OP_INLINE BoolStorage compare(C a, C b) {
  return op_math<K>(sf(a), sf(b));
}

// Logical ops read their operands as bool (0 or 1); not reads only `a`.
template <core::OpKind K>
SF_OP_INLINE BoolStorage logical(BoolStorage a, BoolStorage b) {
  if constexpr (K == core::OpKind::kLogicalNot)
    return op_math<K>(a);
  else
    return op_math<K>(a, b);
}

template <class C>
SF_OP_INLINE C where(BoolStorage c, C a, C b) {
  return static_cast<C>(op_math<core::OpKind::kWhere>(c, sf(a), sf(b)));
}

#undef SF_OP_INLINE

}  // namespace streamfuse::backends::cpu::ops
