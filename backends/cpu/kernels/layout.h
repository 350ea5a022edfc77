// Iterating several strided operands together over one shape: dimensions are merged where
// every operand allows it (so a contiguous tensor is one flat run), and ranges of the flat index
// are walked as runs along the innermost merged dimension.
#pragma once

#include <array>
#include <cstdint>

#include "backends/cpu/kernels/kernels.h"

namespace streamfuse::backends::cpu {

// Operands iterated together: an eager op has at most 4, a fused kernel up to this many (the
// element-wise builder keeps its kernels within it).
inline constexpr int kMaxOperands = 64;

struct Iteration {
  int rank = 0;  // merged dimensions, outermost first; 0 when every dimension is 1
  int num_operands = 0;
  std::int64_t numel = 1;
  std::array<std::int64_t, kMaxRank> sizes{};
  // [0, num_operands) set by make_iteration; the rest left uninitialized (4 KiB: not worth
  // clearing on every eager op).
  std::array<Strides, kMaxOperands> strides;

  // Element stride of operand k along the innermost merged dimension (0 if rank is 0).
  std::int64_t inner_stride(int k) const {
    return rank ? strides[static_cast<std::size_t>(k)][static_cast<std::size_t>(rank - 1)] : 0;
  }
  std::int64_t inner_size() const { return rank ? sizes[static_cast<std::size_t>(rank - 1)] : 1; }
};

// Merges the dimensions of `shape` for `n` operands with the given strides: size-1 dimensions
// vanish, and a dimension folds into the next inner one when for every operand
// stride[outer] == stride[inner] * size[inner].
// Fills `it` in place: an Iteration is 4 KiB, and a copy of one costs a small launch more than
// the merging does.
inline void make_iteration(Iteration& it, const Shape& shape, const Strides* const* strides,
                           int n) {
  it.rank = 0;
  it.sizes = {};
  it.num_operands = n;
  it.numel = shape.numel();
  for (int d = 0; d < shape.rank(); ++d) {
    const std::int64_t size = shape[d];
    if (size == 1) continue;
    const auto r = static_cast<std::size_t>(it.rank);
    bool merge = it.rank > 0;
    for (int k = 0; merge && k < n; ++k) {
      const Strides& s = *strides[k];
      merge =
          it.strides[static_cast<std::size_t>(k)][r - 1] == s[static_cast<std::size_t>(d)] * size;
    }
    if (merge) {  // the new inner dimension absorbs the previous one
      it.sizes[r - 1] *= size;
      for (int k = 0; k < n; ++k)
        it.strides[static_cast<std::size_t>(k)][r - 1] = (*strides[k])[static_cast<std::size_t>(d)];
      continue;
    }
    it.sizes[r] = size;
    for (int k = 0; k < n; ++k)
      it.strides[static_cast<std::size_t>(k)][r] = (*strides[k])[static_cast<std::size_t>(d)];
    ++it.rank;
  }
}
inline Iteration make_iteration(const Shape& shape, const Strides* const* strides, int n) {
  Iteration it;
  make_iteration(it, shape, strides, n);
  return it;
}

// True when operand k is one element broadcast everywhere.
inline bool is_splat(const Iteration& it, int k) {
  for (int d = 0; d < it.rank; ++d)
    if (it.strides[static_cast<std::size_t>(k)][static_cast<std::size_t>(d)] != 0) return false;
  return true;
}

// Whether operand k's element at flat position j of `it` is at element offset j: its strides are
// those of a dense tensor shaped like `it` (along dimensions of size 1 any stride will do). Then
// positions [lo, hi) are one run of its memory, which an interpreter may read in place.
inline bool dense_in(const Iteration& it, int k) {
  std::int64_t dense = 1;
  for (int d = it.rank - 1; d >= 0; --d) {
    const auto u = static_cast<std::size_t>(d);
    if (it.sizes[u] != 1 && it.strides[static_cast<std::size_t>(k)][u] != dense) return false;
    dense *= it.sizes[u];
  }
  return true;
}

// Calls f(offsets, length) for each run of [lo, hi) along the innermost merged dimension, where
// offsets[k] is operand k's element offset at the run's start.
template <class F>
void for_each_run(const Iteration& it, std::int64_t lo, std::int64_t hi, F&& f) {
  std::array<std::int64_t, kMaxOperands> offsets;
  for (int k = 0; k < it.num_operands; ++k) offsets[static_cast<std::size_t>(k)] = 0;
  if (it.rank == 0) {
    if (lo < hi) f(offsets, hi - lo);
    return;
  }
  std::array<std::int64_t, kMaxRank> idx{};
  std::int64_t rest = lo;
  for (int d = it.rank - 1; d >= 0; --d) {
    const auto u = static_cast<std::size_t>(d);
    idx[u] = rest % it.sizes[u];
    rest /= it.sizes[u];
  }
  const auto inner = static_cast<std::size_t>(it.rank - 1);
  while (lo < hi) {
    for (int k = 0; k < it.num_operands; ++k) {
      std::int64_t off = 0;
      for (int d = 0; d < it.rank; ++d)
        off += idx[static_cast<std::size_t>(d)] *
               it.strides[static_cast<std::size_t>(k)][static_cast<std::size_t>(d)];
      offsets[static_cast<std::size_t>(k)] = off;
    }
    const std::int64_t len = std::min(it.sizes[inner] - idx[inner], hi - lo);
    f(offsets, len);
    lo += len;
    idx[inner] += len;
    for (int d = it.rank - 1;
         d > 0 && idx[static_cast<std::size_t>(d)] == it.sizes[static_cast<std::size_t>(d)]; --d) {
      idx[static_cast<std::size_t>(d)] = 0;
      ++idx[static_cast<std::size_t>(d - 1)];
    }
  }
}

}  // namespace streamfuse::backends::cpu
