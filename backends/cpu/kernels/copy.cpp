// Strided copies with dtype conversion: casts, contiguous(), cat, reshape of non-viewable
// layouts, and reading values back to the host.
#include <algorithm>
#include <cstring>

#include "backends/cpu/kernels/convert.h"
#include "backends/cpu/kernels/isa_namespace.h"
#include "backends/cpu/kernels/kernels.h"
#include "backends/cpu/kernels/layout.h"
#include "backends/cpu/kernels/parallel.h"

namespace streamfuse::backends::cpu::SF_ISA_NS {
namespace {

constexpr std::int64_t kGrain = 65536;

template <class D, class S>
void copy_run(const S* src, std::int64_t ss, D* dst, std::int64_t ds, std::int64_t len) {
  if (ss == 1 && ds == 1) {
    if constexpr (std::is_same_v<D, S>) {
      std::memcpy(dst, src, static_cast<std::size_t>(len) * sizeof(S));
    } else {
      for (std::int64_t i = 0; i < len; ++i) dst[i] = convert<D>(src[i]);
    }
  } else if (ss == 0) {
    const D v = convert<D>(src[0]);
    for (std::int64_t i = 0; i < len; ++i) dst[i * ds] = v;
  } else {
    for (std::int64_t i = 0; i < len; ++i) dst[i * ds] = convert<D>(src[i * ss]);
  }
}

// Same dtypes copy their bits (NaN payloads included); the element type only sets the width.
template <class F>
void visit_bits(std::size_t width, F&& f) {
  switch (width) {
    case 1:
      return f(std::uint8_t{});
    case 2:
      return f(std::uint16_t{});
    case 4:
      return f(std::uint32_t{});
    default:
      return f(std::uint64_t{});
  }
}

}  // namespace

void copy(const CopyArgs& a) {
  const Strides* strides[2] = {&a.src.strides, &a.dst.strides};
  const Iteration it = make_iteration(a.shape, strides, 2);
  if (it.numel == 0) return;
  auto run_typed = [&](auto dtag, auto stag) {
    using D = decltype(dtag);
    using S = decltype(stag);
    const S* src = reinterpret_cast<const S*>(a.src.data);
    D* dst = reinterpret_cast<D*>(a.dst.data);
    const std::int64_t ss = it.inner_stride(0), ds = it.inner_stride(1);
    parallel_for(it.numel, kGrain, a.num_threads, [&](std::int64_t lo, std::int64_t hi) {
      for_each_run(it, lo, hi, [&](const auto& off, std::int64_t len) {
        copy_run(src + off[0], ss, dst + off[1], ds, len);
      });
    });
  };
  if (a.src.dtype == a.dst.dtype) {
    visit_bits(element_size(a.src.dtype), [&](auto t) { run_typed(t, t); });
  } else {
    visit_dtype(a.dst.dtype,
                [&](auto d) { visit_dtype(a.src.dtype, [&](auto s) { run_typed(d, s); }); });
  }
}

}  // namespace streamfuse::backends::cpu::SF_ISA_NS
