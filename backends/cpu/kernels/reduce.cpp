// Reductions: sum, mean, max, min, argmax over one axis or all elements, from any layout.
//
// What is accumulated and in which order is core/reduce_math.h, the template generated kernels
// instantiate too: blocks of SF_REDUCE_BLOCK elements fixed by the shape, each folded run by run
// (lanes in a contiguous run), partial results merged in block order. So results depend on the
// shape and layout only, never on the thread count, and a fused reduction can equal this one.
#include <algorithm>
#include <array>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cpu/kernels/convert.h"
#include "backends/cpu/kernels/elementwise_ops.h"
#include "backends/cpu/kernels/isa_namespace.h"
#include "backends/cpu/kernels/kernels.h"
#include "backends/cpu/kernels/layout.h"
#include "backends/cpu/kernels/parallel.h"
#include "backends/cpu/kernels/reduce_ops.h"
#include "streamfuse/error.h"

namespace streamfuse::backends::cpu::SF_ISA_NS {
namespace {

using core::OpKind;

constexpr std::int64_t kBlock = SF_REDUCE_BLOCK;
constexpr std::int64_t kColumns = 256;  // output positions accumulated together (column case)

using reduce_ops::ArgmaxOp;
using reduce_ops::ExtremeOp;
using reduce_ops::kFloatStorage;
using reduce_ops::SumOp;
using reduce_ops::value_of;

// Calls f(load_at) with load_at(offset) the load of a run at p + offset, elements `stride` apart,
// as Op's value type (sf_reduce_block's LoadAt): a unit stride is told to the compiler, so the
// lanes of a contiguous run vectorize.
template <class Op, class S, class F>
decltype(auto) with_loads(const S* p, std::int64_t stride, F&& f) {
  if (stride == 1)
    return f([p](long long offset) {
      return [q = p + offset](long long i) { return value_of<Op>(q[i]); };
    });
  return f([p, stride](long long offset) {
    return [q = p + offset, stride](long long i) { return value_of<Op>(q[i * stride]); };
  });
}

// The reduction of the n elements at p laid out by (rank, sizes, strides) (sf_reduce_block): its
// blocks over `threads`, merged in block order, so the thread count changes nothing.
template <class Op, class S, class Dims>
typename Op::acc reduce_blocks(const S* p, int rank, const Dims& sizes, const Dims& strides,
                               std::int64_t n, int threads) {
  return with_loads<Op>(p, strides[static_cast<std::size_t>(rank - 1)], [&](const auto& load_at) {
    const std::int64_t blocks = sf_reduce_blocks(n);
    // One block: its result as it is (merging it into the identity changes no value).
    if (blocks <= 1)
      return blocks ? sf_reduce_block<Op>(load_at, rank, sizes, strides, n, 0) : Op::identity();
    std::vector<typename Op::acc> partial(static_cast<std::size_t>(blocks));
    parallel_for(blocks, 1, threads, [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t b = lo; b < hi; ++b)
        partial[static_cast<std::size_t>(b)] =
            sf_reduce_block<Op>(load_at, rank, sizes, strides, n, b);
    });
    typename Op::acc acc = Op::identity();
    for (const auto& part : partial) acc = Op::merge(acc, part);
    return acc;
  });
}

// One row of `n` elements `stride` apart.
template <class Op, class S>
typename Op::acc reduce_row(const S* p, std::int64_t n, std::int64_t stride, int threads) {
  const std::array<std::int64_t, 1> size{n}, strides{stride};
  return reduce_blocks<Op>(p, 1, size, strides, n, threads);
}

// The value to store for an accumulator.
template <core::OpKind K, class Op>
auto finish(const typename Op::acc& acc, std::int64_t count) {
  if constexpr (K == core::OpKind::kArgmax)
    return acc.index;
  else if constexpr (K == core::OpKind::kMean)
    return sf_reduce_mean<Op>(acc, count);
  else
    return acc;
}

// A double of a float dtype's sum or mean goes through float (as the fused kernels store it:
// sf_reduce_results); f64's stays double.
template <class Out, class V>
Out to_output(V v) {
  if constexpr (std::is_same_v<V, double> && !std::is_same_v<Out, double>)
    return convert<Out>(static_cast<float>(v));
  else
    return convert<Out>(v);
}

// The output storage type, as the frontend's result dtype: sum keeps float dtypes and sums
// integers to i64, mean gives f32 for integers, max/min keep the dtype, argmax gives i64.
template <core::OpKind K, class S>
using out_t = std::conditional_t<
    K == core::OpKind::kArgmax, std::int64_t,
    std::conditional_t<kFloatStorage<S> || reduce_ops::kF64Storage<S> || K == core::OpKind::kMax ||
                           K == core::OpKind::kMin,
                       S, std::conditional_t<K == core::OpKind::kSum, std::int64_t, float>>>;

template <core::OpKind K, class Op, class S>
void reduce_all(const ReduceArgs& a) {
  const Strides* strides[1] = {&a.input.strides};
  Iteration it = make_iteration(a.shape, strides, 1);
  if (it.rank == 0) {  // one element
    it.rank = 1;
    it.sizes[0] = it.numel;
    it.strides[0][0] = 0;
  }
  const typename Op::acc acc = reduce_blocks<Op>(reinterpret_cast<const S*>(a.input.data), it.rank,
                                                 it.sizes, it.strides[0], it.numel, a.num_threads);
  *static_cast<out_t<K, S>*>(a.out) = to_output<out_t<K, S>>(finish<K, Op>(acc, it.numel));
}

template <core::OpKind K, class Op, class S>
void reduce_axis(const ReduceArgs& a) {
  using Out = out_t<K, S>;
  const int axis = a.axis;
  const std::int64_t len = a.shape[axis];
  const std::int64_t rstride = a.input.strides[static_cast<std::size_t>(axis)];
  Shape kept;
  Strides kept_strides{};
  for (int d = 0; d < a.shape.rank(); ++d) {
    if (d == axis) continue;
    kept_strides[static_cast<std::size_t>(kept.rank())] =
        a.input.strides[static_cast<std::size_t>(d)];
    kept.push_back(a.shape[d]);
  }
  const Strides* strides[1] = {&kept_strides};
  const Iteration it = make_iteration(kept, strides, 1);
  const std::int64_t outputs = it.numel;
  const S* base = reinterpret_cast<const S*>(a.input.data);
  Out* out = static_cast<Out*>(a.out);
  const int threads = max_threads(a.num_threads);

  // Few long rows: each row's blocks over the threads (the result is the same either way).
  if (outputs < 2 * threads && len >= 2 * kBlock) {
    for_each_run(
        it, 0, outputs, [&, pos = std::int64_t{0}](const auto& off, std::int64_t run) mutable {
          for (std::int64_t j = 0; j < run; ++j, ++pos)
            out[pos] = to_output<Out>(finish<K, Op>(
                reduce_row<Op>(base + off[0] + j * it.inner_stride(0), len, rstride, a.num_threads),
                len));
        });
    return;
  }
  // Reducing across rows of a row-major layout: accumulate neighbouring outputs together so the
  // inner loop reads contiguous memory.
  const bool columns = rstride != 1 && it.rank >= 1 && it.inner_stride(0) == 1;
  const std::int64_t grain = std::max<std::int64_t>(1, 32768 / std::max<std::int64_t>(len, 1));
  parallel_for(outputs, grain, a.num_threads, [&](std::int64_t lo, std::int64_t hi) {
    std::int64_t pos = lo;
    for_each_run(it, lo, hi, [&](const auto& off, std::int64_t run) {
      const S* row0 = base + off[0];
      if (columns) {
        for (std::int64_t j0 = 0; j0 < run; j0 += kColumns) {
          const std::int64_t width = std::min(kColumns, run - j0);
          // Each output's elements are strided: folded in order, block by block.
          typename Op::acc acc[kColumns], part[kColumns];
          for (std::int64_t j = 0; j < width; ++j) acc[j] = Op::identity();
          for (std::int64_t r0 = 0; r0 < len; r0 += kBlock) {
            for (std::int64_t j = 0; j < width; ++j) part[j] = Op::identity();
            for (std::int64_t r = r0; r < std::min(len, r0 + kBlock); ++r) {
              const S* row = row0 + j0 + r * rstride;
              for (std::int64_t j = 0; j < width; ++j)
                part[j] = Op::step(part[j], value_of<Op>(row[j]), r);
            }
            for (std::int64_t j = 0; j < width; ++j) acc[j] = Op::merge(acc[j], part[j]);
          }
          for (std::int64_t j = 0; j < width; ++j)
            out[pos + j0 + j] = to_output<Out>(finish<K, Op>(acc[j], len));
        }
      } else {
        for (std::int64_t j = 0; j < run; ++j)
          out[pos + j] = to_output<Out>(
              finish<K, Op>(reduce_row<Op>(row0 + j * it.inner_stride(0), len, rstride, 1), len));
      }
      pos += run;
    });
  });
}

template <core::OpKind K, class Op, class S>
void reduce_typed(const ReduceArgs& a) {
  if (a.out_dtype != dtype_of_storage<out_t<K, S>>())
    throw Error("internal error: " + std::string(core::op_name(K)) + " would write " +
                std::string(dtype_name(a.out_dtype)) + "; please report this");
  if (a.axis == core::kAllAxes)
    reduce_all<K, Op, S>(a);
  else
    reduce_axis<K, Op, S>(a);
}

}  // namespace

void reduce(const ReduceArgs& a) {
  visit_dtype(a.input.dtype, [&](auto tag) {
    using S = decltype(tag);
    switch (a.kind) {
      case core::OpKind::kSum:
        return reduce_typed<core::OpKind::kSum, SumOp<S>, S>(a);
      case core::OpKind::kMean:
        return reduce_typed<core::OpKind::kMean, SumOp<S>, S>(a);
      case core::OpKind::kMax:
        return reduce_typed<core::OpKind::kMax, ExtremeOp<S, true>, S>(a);
      case core::OpKind::kMin:
        return reduce_typed<core::OpKind::kMin, ExtremeOp<S, false>, S>(a);
      case core::OpKind::kArgmax:
        return reduce_typed<core::OpKind::kArgmax, ArgmaxOp<S>, S>(a);
      default:
        return;
    }
  });
}

}  // namespace streamfuse::backends::cpu::SF_ISA_NS
