// The folds of the reductions for the fused interpreter (ChunkOps::fold): the reduction template's
// sf_reduce_fold with the eager kernel's accumulators (reduce_ops.h), compiled per ISA level like
// the eager loops, so a fold vectorizes as the eager reduction does.
#include <string>

#include "backends/cpu/kernels/convert.h"
#include "backends/cpu/kernels/isa_namespace.h"
#include "backends/cpu/kernels/kernels.h"
#include "backends/cpu/kernels/reduce_ops.h"

namespace streamfuse::backends::cpu::SF_ISA_NS {
namespace {

// Reduction K with accumulator Op over values stored as S: FoldFns' functions.
template <core::OpKind K, class Op, class S>
struct Folds {
  using Fold = sf_reduce_fold<Op>;
  using Acc = typename Op::acc;
  static_assert(sizeof(Fold) <= kFoldStateBytes && alignof(Fold) <= 64 &&
                sizeof(Acc) <= kFoldAccBytes && alignof(Acc) <= 16);

  static std::int64_t bits(const Acc& a, std::int64_t count) {
    if constexpr (K == core::OpKind::kMean)
      return sf_reduce_bits(sf_reduce_results<Op>::mean(a, count));
    else
      return sf_reduce_bits(sf_reduce_results<Op>::value(a));
  }

  static void begin(void* s, int lanes, std::int64_t n, std::int64_t index0) {
    static_cast<Fold*>(s)->begin(lanes, n, index0);
  }
  static void push(void* s, const void* values, std::int64_t m) {
    const S* x = static_cast<const S*>(values);
    static_cast<Fold*>(s)->push([x](long long i) { return reduce_ops::value_of<Op>(x[i]); }, m);
  }
  static void result(const void* s, void* acc) {
    *static_cast<Acc*>(acc) = static_cast<const Fold*>(s)->result();
  }
  static void identity(void* acc) { *static_cast<Acc*>(acc) = Op::identity(); }
  static void merge(void* acc, const void* part) {
    Acc* a = static_cast<Acc*>(acc);
    *a = Op::merge(*a, *static_cast<const Acc*>(part));
  }
  static std::int64_t finish(const void* acc, std::int64_t count) {
    return bits(*static_cast<const Acc*>(acc), count);
  }

  static void column_identity(void* accs, std::int64_t count) {
    Acc* a = static_cast<Acc*>(accs);
    for (std::int64_t t = 0; t < count; ++t) a[t] = Op::identity();
  }
  static void column_step(void* accs, const void* values, std::int64_t count, std::int64_t index) {
    Acc* a = static_cast<Acc*>(accs);
    const S* x = static_cast<const S*>(values);
    for (std::int64_t t = 0; t < count; ++t)
      a[t] = Op::step(a[t], reduce_ops::value_of<Op>(x[t]), index);
  }
  static void column_merge(void* accs, const void* parts, std::int64_t count) {
    Acc* a = static_cast<Acc*>(accs);
    const Acc* b = static_cast<const Acc*>(parts);
    for (std::int64_t t = 0; t < count; ++t) a[t] = Op::merge(a[t], b[t]);
  }
  static void column_finish(const void* accs, std::int64_t count, std::int64_t n,
                            std::int64_t* out) {
    const Acc* a = static_cast<const Acc*>(accs);
    for (std::int64_t t = 0; t < count; ++t) out[t] = bits(a[t], n);
  }

  static void rows(const void* values, std::int64_t count, std::int64_t n, int lanes,
                   std::int64_t* results, std::int64_t stride) {
    for (std::int64_t t = 0; t < count; ++t) {
      const S* x = static_cast<const S*>(values) + t * n;
      Fold f;
      f.begin(lanes, n, 0);
      f.push([x](long long i) { return reduce_ops::value_of<Op>(x[i]); }, n);
      results[t * stride] = bits(Op::merge(Op::identity(), f.result()), n);
    }
  }

  static constexpr FoldFns kFns{
      begin,           push,        result,       identity,      merge, finish,
      column_identity, column_step, column_merge, column_finish, rows};
};

template <core::OpKind K, class Op, class S>
const FoldFns* fold_fns() {
  return &Folds<K, Op, S>::kFns;
}

template <class S>
const FoldFns* fold_of_storage(core::OpKind kind) {
  using core::OpKind;
  switch (kind) {
    case OpKind::kSum:
      return fold_fns<OpKind::kSum, reduce_ops::SumOp<S>, S>();
    case OpKind::kMean:
      return fold_fns<OpKind::kMean, reduce_ops::SumOp<S>, S>();
    case OpKind::kMax:
      return fold_fns<OpKind::kMax, reduce_ops::ExtremeOp<S, true>, S>();
    case OpKind::kMin:
      return fold_fns<OpKind::kMin, reduce_ops::ExtremeOp<S, false>, S>();
    case OpKind::kArgmax:
      return fold_fns<OpKind::kArgmax, reduce_ops::ArgmaxOp<S>, S>();
    default:
      return nullptr;
  }
}

}  // namespace

const FoldFns* chunk_fold(core::OpKind kind, DType compute) {
  switch (compute) {
    case kF32:
      return fold_of_storage<float>(kind);
    case kI32:
      return fold_of_storage<std::int32_t>(kind);
    case kI64:
      return fold_of_storage<std::int64_t>(kind);
    case kBool:
      return fold_of_storage<BoolStorage>(kind);
    case kF64:
      return fold_of_storage<double>(kind);
    default:
      return nullptr;
  }
}

}  // namespace streamfuse::backends::cpu::SF_ISA_NS
