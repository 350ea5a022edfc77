// Reductions: sum, mean, max, min, argmax over one axis or all elements, from any layout.
//
// Results do not depend on the thread count: work is split into blocks fixed by the shape, and
// partial results combine in block order. Contiguous runs accumulate in 16 interleaved lanes
// (vectorizable without reassociating across iterations), combined in lane order. Float sums
// accumulate in double, integer sums in wrapping int64.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/kernels/convert.h"
#include "backends/cpu/kernels/elementwise_ops.h"
#include "backends/cpu/kernels/isa_namespace.h"
#include "backends/cpu/kernels/kernels.h"
#include "backends/cpu/kernels/layout.h"
#include "backends/cpu/kernels/parallel.h"
#include "streamfuse/error.h"

namespace streamfuse::backends::cpu::SF_ISA_NS {
namespace {

using core::OpKind;

constexpr int kLanes = 16;
constexpr std::int64_t kBlock = 65536;  // elements per partial result of a long reduction
constexpr std::int64_t kColumns = 256;  // output positions accumulated together (column case)

template <class S>
constexpr bool kFloatStorage =
    std::is_same_v<S, float> || std::is_same_v<S, Half> || std::is_same_v<S, BFloat16>;
// The type max/min/argmax compare in.
template <class S>
using value_t = std::conditional_t<kFloatStorage<S>, float, S>;

template <class S>
struct SumOp {
  using Acc = std::conditional_t<kFloatStorage<S>, double, std::int64_t>;
  static Acc identity() { return 0; }
  static Acc step(Acc acc, S x, std::int64_t) {
    if constexpr (kFloatStorage<S>)
      return acc + static_cast<double>(convert<float>(x));
    else
      return sf_add(static_cast<long long>(acc), static_cast<long long>(x));
  }
  static Acc merge(Acc a, Acc b) {
    if constexpr (kFloatStorage<S>)
      return a + b;
    else
      return sf_add(static_cast<long long>(a), static_cast<long long>(b));
  }
};

template <class S, bool kMax>
struct ExtremeOp {
  using V = value_t<S>;
  using Acc = V;
  static Acc identity() {
    if constexpr (kFloatStorage<S>)
      return kMax ? -std::numeric_limits<float>::infinity()
                  : std::numeric_limits<float>::infinity();
    else
      return kMax ? std::numeric_limits<V>::lowest() : std::numeric_limits<V>::max();
  }
  static Acc merge(Acc a, Acc b) {
    if constexpr (kFloatStorage<S>)
      return kMax ? sf_max(a, b) : sf_min(a, b);  // float: NaN wins
    else
      return kMax ? std::max(a, b) : std::min(a, b);
  }
  static Acc step(Acc acc, S x, std::int64_t) { return merge(acc, convert<V>(x)); }
};

// The first index of the largest value; NaN counts as largest (the first NaN wins).
template <class S>
struct ArgmaxOp {
  using V = value_t<S>;
  struct Acc {
    V value;
    std::int64_t index;
  };
  static bool greater(V a, V b) {
    if constexpr (kFloatStorage<S>)
      return (a != a && b == b) || a > b;
    else
      return a > b;
  }
  // The smallest value (-inf for floats) at an index past every real one: any element ties or
  // beats it, and wins the tie by its smaller index.
  static Acc identity() {
    if constexpr (kFloatStorage<S>)
      return {-std::numeric_limits<float>::infinity(), std::numeric_limits<std::int64_t>::max()};
    else
      return {std::numeric_limits<V>::lowest(), std::numeric_limits<std::int64_t>::max()};
  }
  // Through merge, so a value equal to the identity's (the lowest, or -inf) still wins its
  // index over the identity's placeholder.
  static Acc step(Acc acc, S x, std::int64_t i) { return merge(acc, Acc{convert<V>(x), i}); }
  static Acc merge(Acc a, Acc b) {
    if (greater(b.value, a.value)) return b;
    if (greater(a.value, b.value)) return a;
    return b.index < a.index ? b : a;  // equal (or both NaN): the earlier index
  }
};

// Folds `n` elements `stride` apart, the first being element `index0` of the reduction.
template <class Op, class S>
typename Op::Acc reduce_run(const S* p, std::int64_t n, std::int64_t stride, std::int64_t index0,
                            typename Op::Acc acc) {
  std::int64_t i = 0;
  if (stride == 1 && n >= 4 * kLanes) {
    typename Op::Acc lanes[kLanes];
    for (int l = 0; l < kLanes; ++l) lanes[l] = Op::identity();
    for (; i + kLanes <= n; i += kLanes)
      for (int l = 0; l < kLanes; ++l) lanes[l] = Op::step(lanes[l], p[i + l], index0 + i + l);
    for (int l = 0; l < kLanes; ++l) acc = Op::merge(acc, lanes[l]);
  }
  for (; i < n; ++i) acc = Op::step(acc, p[i * stride], index0 + i);
  return acc;
}

// Folds a reduction of `n` elements `stride` apart, split into fixed blocks over threads.
template <class Op, class S>
typename Op::Acc reduce_long(const S* p, std::int64_t n, std::int64_t stride, int threads) {
  const std::int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<typename Op::Acc> partial(static_cast<std::size_t>(blocks));
  parallel_for(blocks, 1, threads, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t b = lo; b < hi; ++b) {
      const std::int64_t start = b * kBlock, len = std::min(kBlock, n - start);
      partial[static_cast<std::size_t>(b)] =
          reduce_run<Op>(p + start * stride, len, stride, start, Op::identity());
    }
  });
  typename Op::Acc acc = Op::identity();
  for (const auto& part : partial) acc = Op::merge(acc, part);
  return acc;
}

// The value to store for an accumulator.
template <core::OpKind K, class Op>
auto finish(const typename Op::Acc& acc, std::int64_t count) {
  if constexpr (K == core::OpKind::kArgmax)
    return acc.index;
  else if constexpr (K == core::OpKind::kMean)
    return static_cast<double>(acc) / static_cast<double>(count);
  else
    return acc;
}

template <class Out, class V>
Out to_output(V v) {
  if constexpr (std::is_same_v<V, double>)
    return convert<Out>(static_cast<float>(v));
  else
    return convert<Out>(v);
}

// The output storage type, as the frontend's result dtype: sum keeps float dtypes and sums
// integers to i64, mean gives f32 for integers, max/min keep the dtype, argmax gives i64.
template <core::OpKind K, class S>
using out_t = std::conditional_t<
    K == core::OpKind::kArgmax, std::int64_t,
    std::conditional_t<kFloatStorage<S> || K == core::OpKind::kMax || K == core::OpKind::kMin, S,
                       std::conditional_t<K == core::OpKind::kSum, std::int64_t, float>>>;

template <core::OpKind K, class Op, class S>
void reduce_all(const ReduceArgs& a) {
  const Strides* strides[1] = {&a.input.strides};
  const Iteration it = make_iteration(a.shape, strides, 1);
  const S* base = reinterpret_cast<const S*>(a.input.data);
  typename Op::Acc acc = Op::identity();
  if (it.rank <= 1) {  // one strided run: the common case
    acc = reduce_long<Op>(base, it.numel, it.inner_stride(0), a.num_threads);
  } else {
    const std::int64_t blocks = (it.numel + kBlock - 1) / kBlock;
    std::vector<typename Op::Acc> partial(static_cast<std::size_t>(blocks));
    parallel_for(blocks, 1, a.num_threads, [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t b = lo; b < hi; ++b) {
        typename Op::Acc part = Op::identity();
        std::int64_t index = b * kBlock;
        for_each_run(it, index, std::min(it.numel, index + kBlock),
                     [&](const auto& off, std::int64_t len) {
                       part = reduce_run<Op>(base + off[0], len, it.inner_stride(0), index, part);
                       index += len;
                     });
        partial[static_cast<std::size_t>(b)] = part;
      }
    });
    for (const auto& part : partial) acc = Op::merge(acc, part);
  }
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

  if (outputs < 2 * threads && len >= 2 * kBlock) {  // few long rows: split each row instead
    for_each_run(
        it, 0, outputs, [&, pos = std::int64_t{0}](const auto& off, std::int64_t run) mutable {
          for (std::int64_t j = 0; j < run; ++j, ++pos)
            out[pos] =
                to_output<Out>(finish<K, Op>(reduce_long<Op>(base + off[0] + j * it.inner_stride(0),
                                                             len, rstride, a.num_threads),
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
          typename Op::Acc acc[kColumns];
          for (std::int64_t j = 0; j < width; ++j) acc[j] = Op::identity();
          for (std::int64_t r = 0; r < len; ++r) {
            const S* row = row0 + j0 + r * rstride;
            for (std::int64_t j = 0; j < width; ++j) acc[j] = Op::step(acc[j], row[j], r);
          }
          for (std::int64_t j = 0; j < width; ++j)
            out[pos + j0 + j] = to_output<Out>(finish<K, Op>(acc[j], len));
        }
      } else {
        for (std::int64_t j = 0; j < run; ++j)
          out[pos + j] = to_output<Out>(finish<K, Op>(
              reduce_run<Op>(row0 + j * it.inner_stride(0), len, rstride, 0, Op::identity()), len));
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
