// The eager element-wise kernel. The flat index space is cut into L1-sized chunks spread over
// threads; per chunk, each operand is used in place when it is dense and already of the compute
// type, or gathered (strided, broadcast, converted) into a chunk buffer; then one vectorizable
// loop computes the op, and the result is converted and scattered if the output needs it.
#include <algorithm>
#include <cstring>
#include <string>

#include "backends/cpu/kernels/convert.h"
#include "backends/cpu/kernels/elementwise_ops.h"
#include "backends/cpu/kernels/isa_namespace.h"
#include "backends/cpu/kernels/kernels.h"
#include "backends/cpu/kernels/layout.h"
#include "backends/cpu/kernels/parallel.h"
#include "core/op_forms.h"
#include "streamfuse/error.h"

namespace streamfuse::backends::cpu::SF_ISA_NS {
namespace {

using core::OpCategory;
using core::OpKind;

constexpr std::int64_t kChunk = 1024;   // elements: 4 buffers of 8-byte values fill 32 KiB
constexpr std::int64_t kGrain = 32768;  // elements a thread must have before another starts

template <core::OpKind K, class C>
void unary_chunk(const void* const* in, void* out, std::int64_t n) {
  const C* a = static_cast<const C*>(in[0]);
  C* o = static_cast<C*>(out);
  for (std::int64_t i = 0; i < n; ++i) o[i] = ops::unary<K, C>(a[i]);
}
template <core::OpKind K, class C>
void binary_chunk(const void* const* in, void* out, std::int64_t n) {
  const C* a = static_cast<const C*>(in[0]);
  const C* b = static_cast<const C*>(in[1]);
  C* o = static_cast<C*>(out);
  for (std::int64_t i = 0; i < n; ++i) o[i] = ops::binary<K, C>(a[i], b[i]);
}
template <core::OpKind K, class C>
void compare_chunk(const void* const* in, void* out, std::int64_t n) {
  const C* a = static_cast<const C*>(in[0]);
  const C* b = static_cast<const C*>(in[1]);
  BoolStorage* o = static_cast<BoolStorage*>(out);
  for (std::int64_t i = 0; i < n; ++i) o[i] = ops::compare<K, C>(a[i], b[i]);
}
template <core::OpKind K>
void logical_chunk(const void* const* in, void* out, std::int64_t n) {
  const BoolStorage* a = static_cast<const BoolStorage*>(in[0]);
  const BoolStorage* b =
      static_cast<const BoolStorage*>(K == core::OpKind::kLogicalNot ? in[0] : in[1]);
  BoolStorage* o = static_cast<BoolStorage*>(out);
  for (std::int64_t i = 0; i < n; ++i) o[i] = ops::logical<K>(a[i], b[i]);
}
template <class C>
void where_chunk(const void* const* in, void* out, std::int64_t n) {
  const BoolStorage* c = static_cast<const BoolStorage*>(in[0]);
  const C* a = static_cast<const C*>(in[1]);
  const C* b = static_cast<const C*>(in[2]);
  C* o = static_cast<C*>(out);
  for (std::int64_t i = 0; i < n; ++i) o[i] = ops::where(c[i], a[i], b[i]);
}

// Whether op K has a form for compute type C (core/op_forms.h, the table the JIT reads too).
template <core::OpKind K, class C>
constexpr bool kHasForm = std::is_floating_point_v<C>      ? core::op_forms(K).floating
                          : std::is_same_v<C, BoolStorage> ? core::op_forms(K).boolean
                                                           : core::op_forms(K).integer;

// The chunk loop of `kind` on compute type C, or null where the op has no form for C (float-only
// math on integers, arithmetic on bools). One case per line: clang-format cannot lay out cases
// made by macros, so it is off here.
template <class C>
ChunkFn select_typed(core::OpKind kind) {
  // clang-format off
#define SF_CASE(name, chunk) \
  case core::OpKind::k##name: \
    if constexpr (kHasForm<core::OpKind::k##name, C>) return chunk<core::OpKind::k##name, C>; else break;
  switch (kind) {
    SF_CASE(Exp, unary_chunk)
    SF_CASE(Log, unary_chunk)
    SF_CASE(Sqrt, unary_chunk)
    SF_CASE(Rsqrt, unary_chunk)
    SF_CASE(Recip, unary_chunk)
    SF_CASE(Sin, unary_chunk)
    SF_CASE(Cos, unary_chunk)
    SF_CASE(Tanh, unary_chunk)
    SF_CASE(Erf, unary_chunk)
    SF_CASE(Sigmoid, unary_chunk)
    SF_CASE(Neg, unary_chunk)
    SF_CASE(Abs, unary_chunk)
    SF_CASE(Relu, unary_chunk)
    SF_CASE(Add, binary_chunk)
    SF_CASE(Sub, binary_chunk)
    SF_CASE(Mul, binary_chunk)
    SF_CASE(Pow, binary_chunk)
    SF_CASE(Div, binary_chunk)
    SF_CASE(Maximum, binary_chunk)
    SF_CASE(Minimum, binary_chunk)
    SF_CASE(Eq, compare_chunk)
    SF_CASE(Ne, compare_chunk)
    SF_CASE(Lt, compare_chunk)
    SF_CASE(Le, compare_chunk)
    SF_CASE(Gt, compare_chunk)
    SF_CASE(Ge, compare_chunk)
    case core::OpKind::kLogicalAnd: return logical_chunk<core::OpKind::kLogicalAnd>;
    case core::OpKind::kLogicalOr: return logical_chunk<core::OpKind::kLogicalOr>;
    case core::OpKind::kLogicalNot: return logical_chunk<core::OpKind::kLogicalNot>;
    case core::OpKind::kWhere: return where_chunk<C>;
    default: break;
  }
#undef SF_CASE
  // clang-format on
  return nullptr;
}

// What input j is read as, and what the chunk loop writes.
ComputeType input_compute(core::OpKind kind, ComputeType c, int j) {
  if (kind == core::OpKind::kWhere && j == 0) return ComputeType::kBool;
  return core::op_category(kind) == core::OpCategory::kLogical ? ComputeType::kBool : c;
}
ComputeType output_compute(core::OpKind kind, ComputeType c) {
  const core::OpCategory cat = core::op_category(kind);
  return cat == core::OpCategory::kCompare || cat == core::OpCategory::kLogical ? ComputeType::kBool
                                                                                : c;
}

// Converts `len` elements of type S, `stride` apart, to type C.
template <class C, class S>
void load_run(const S* src, std::int64_t stride, std::int64_t len, C* dst) {
  if (stride == 1) {
    for (std::int64_t i = 0; i < len; ++i) dst[i] = convert<C>(src[i]);
  } else if (stride == 0) {
    const C v = convert<C>(src[0]);
    for (std::int64_t i = 0; i < len; ++i) dst[i] = v;
  } else {
    for (std::int64_t i = 0; i < len; ++i) dst[i] = convert<C>(src[i * stride]);
  }
}
template <class D, class C>
void store_run(const C* src, std::int64_t len, D* dst, std::int64_t stride) {
  if (stride == 1) {
    for (std::int64_t i = 0; i < len; ++i) dst[i] = convert<D>(src[i]);
  } else {
    for (std::int64_t i = 0; i < len; ++i) dst[i * stride] = convert<D>(src[i]);
  }
}

// Operand k's elements [lo, lo + n) as compute type `c`, into `buf`.
void gather(const Iteration& it, const Operand& op, int k, ComputeType c, std::int64_t lo,
            std::int64_t n, void* buf) {
  visit_compute(c, [&](auto ctag) {
    using C = decltype(ctag);
    visit_dtype(op.dtype, [&](auto stag) {
      using S = decltype(stag);
      C* dst = static_cast<C*>(buf);
      const S* base = reinterpret_cast<const S*>(op.data);
      const std::int64_t stride = it.inner_stride(k);
      for_each_run(it, lo, lo + n, [&](const auto& offsets, std::int64_t len) {
        load_run(base + offsets[static_cast<std::size_t>(k)], stride, len, dst);
        dst += len;
      });
    });
  });
}

void scatter(const Iteration& it, const Operand& op, int k, ComputeType c, std::int64_t lo,
             std::int64_t n, const void* buf) {
  visit_compute(c, [&](auto ctag) {
    using C = decltype(ctag);
    visit_dtype(op.dtype, [&](auto dtag) {
      using D = decltype(dtag);
      const C* src = static_cast<const C*>(buf);
      D* base = reinterpret_cast<D*>(op.data);
      const std::int64_t stride = it.inner_stride(k);
      for_each_run(it, lo, lo + n, [&](const auto& offsets, std::int64_t len) {
        store_run(src, len, base + offsets[static_cast<std::size_t>(k)], stride);
        src += len;
      });
    });
  });
}

enum class Access : std::uint8_t { kDirect, kSplat, kGather };

}  // namespace

ChunkFn chunk_op(core::OpKind kind, DType compute) {
  return visit_compute(compute_type_of(compute),
                       [&](auto tag) { return select_typed<decltype(tag)>(kind); });
}

void elementwise(const ElementwiseArgs& a) {
  const int n_in = a.num_inputs;
  const Strides* strides[kMaxOperands];
  for (int j = 0; j < n_in; ++j) strides[j] = &a.inputs[static_cast<std::size_t>(j)].strides;
  strides[n_in] = &a.output.strides;
  const Iteration it = make_iteration(a.shape, strides, n_in + 1);
  if (it.numel == 0) return;

  const ComputeType c = compute_type_of(a.compute);
  const ChunkFn fn = chunk_op(a.kind, a.compute);
  if (!fn)
    throw Error("internal error: no CPU kernel for " + std::string(core::op_name(a.kind)) + " on " +
                std::string(dtype_name(a.compute)) + " operands; please report this");

  Access access[3];
  ComputeType in_c[3];
  for (int j = 0; j < n_in; ++j) {
    const Operand& op = a.inputs[static_cast<std::size_t>(j)];
    in_c[j] = input_compute(a.kind, c, j);
    const bool native = op.dtype == storage_dtype_of(in_c[j]);
    access[j] = native && dense_in(it, j) ? Access::kDirect
                : is_splat(it, j)         ? Access::kSplat
                                          : Access::kGather;
  }
  const ComputeType out_c = output_compute(a.kind, c);
  const bool direct_out = a.output.dtype == storage_dtype_of(out_c) && dense_in(it, n_in);
  const std::size_t out_size = element_size(a.output.dtype);

  parallel_for(it.numel, kGrain, a.num_threads, [&](std::int64_t lo, std::int64_t hi) {
    alignas(64) unsigned char buffers[4][kChunk * 8];
    const void* in[3] = {};
    for (int j = 0; j < n_in; ++j) {
      if (access[j] == Access::kSplat) {  // one value, converted once, repeated across the chunk
        const Operand& op = a.inputs[static_cast<std::size_t>(j)];
        visit_compute(in_c[j], [&](auto ctag) {
          using C = decltype(ctag);
          const C v = visit_dtype(op.dtype, [&](auto s) {
            return convert<C>(*reinterpret_cast<const decltype(s)*>(op.data));
          });
          std::fill_n(reinterpret_cast<C*>(buffers[j]), kChunk, v);
        });
        in[j] = buffers[j];
      }
    }
    for (std::int64_t start = lo; start < hi; start += kChunk) {
      const std::int64_t n = std::min(kChunk, hi - start);
      for (int j = 0; j < n_in; ++j) {
        const Operand& op = a.inputs[static_cast<std::size_t>(j)];
        if (access[j] == Access::kDirect) {
          in[j] = op.data + start * static_cast<std::int64_t>(element_size(op.dtype));
        } else if (access[j] == Access::kGather) {
          gather(it, op, j, in_c[j], start, n, buffers[j]);
          in[j] = buffers[j];
        }
      }
      void* out = direct_out ? a.output.data + start * static_cast<std::int64_t>(out_size)
                             : static_cast<void*>(buffers[3]);
      fn(in, out, n);
      if (!direct_out) scatter(it, a.output, n_in, out_c, start, n, buffers[3]);
    }
  });
}

// The interpreters' gathers and scatters copy an operand that lies in the iteration's order in
// the chunk's compute type (a chunk read "as" f16 holds floats) as one run: most of a small
// launch's are (the rows of a [4, 32] layer norm), and the general walk's set-up cost about as much
// as the copy.
void chunk_gather(const Iteration& it, const Operand& operand, int k, DType as, std::int64_t lo,
                  std::int64_t n, void* buf) {
  if (operand.dtype == storage_dtype_of(compute_type_of(as)) && dense_in(it, k)) {
    const auto size = static_cast<std::int64_t>(element_size(operand.dtype));
    std::memcpy(buf, operand.data + lo * size, static_cast<std::size_t>(n * size));
    return;
  }
  gather(it, operand, k, compute_type_of(as), lo, n, buf);
}

void chunk_scatter(const Iteration& it, const Operand& operand, int k, DType from, std::int64_t lo,
                   std::int64_t n, const void* buf) {
  if (operand.dtype == storage_dtype_of(compute_type_of(from)) && dense_in(it, k)) {
    const auto size = static_cast<std::int64_t>(element_size(operand.dtype));
    std::memcpy(operand.data + lo * size, buf, static_cast<std::size_t>(n * size));
    return;
  }
  scatter(it, operand, k, compute_type_of(from), lo, n, buf);
}

void chunk_convert(DType from, DType to, const void* in, void* out, std::int64_t n) {
  visit_compute(compute_type_of(from), [&](auto ftag) {
    using F = decltype(ftag);
    visit_compute(compute_type_of(to), [&](auto ttag) {
      using T = decltype(ttag);
      const F* src = static_cast<const F*>(in);
      T* dst = static_cast<T*>(out);
      for (std::int64_t i = 0; i < n; ++i) dst[i] = convert<T>(src[i]);
    });
  });
}

void chunk_round(DType to, void* values, std::int64_t n) {
  float* f = static_cast<float*>(values);
  std::int32_t* i32 = static_cast<std::int32_t*>(values);
  switch (to) {
    case kF16:
      for (std::int64_t i = 0; i < n; ++i) f[i] = sf_round_f16(f[i]);
      break;
    case kBF16:
      for (std::int64_t i = 0; i < n; ++i) f[i] = sf_round_bf16(f[i]);
      break;
    case kI8:
      for (std::int64_t i = 0; i < n; ++i) i32[i] = sf_wrap_i8(i32[i]);
      break;
    case kU8:
      for (std::int64_t i = 0; i < n; ++i) i32[i] = sf_wrap_u8(i32[i]);
      break;
    default:
      throw Error("internal error: no rounding to " + std::string(dtype_name(to)) +
                  "; please report this");
  }
}

}  // namespace streamfuse::backends::cpu::SF_ISA_NS
