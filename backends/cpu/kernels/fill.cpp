// full() and arange() into contiguous outputs.
#include <algorithm>
#include <cstring>

#include "backends/cpu/kernels/convert.h"
#include "backends/cpu/kernels/isa_namespace.h"
#include "backends/cpu/kernels/kernels.h"
#include "backends/cpu/kernels/parallel.h"
#include "core/scalar_values.h"

namespace streamfuse::backends::cpu::SF_ISA_NS {
namespace {

constexpr std::int64_t kGrain = 65536;

// The value full() stores in T: core/scalar_values.h decides (widened to T's compute type),
// converted to storage exactly.
template <class T>
T scalar_as(const Scalar& s) {
  const std::int64_t bits = core::fill_scalar_bits(s, dtype_of_storage<T>());
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(bits);
  } else if constexpr (std::is_same_v<T, double>) {
    double d;
    std::memcpy(&d, &bits, sizeof d);
    return d;
  } else {
    float f;
    const auto low = static_cast<std::uint32_t>(bits);
    std::memcpy(&f, &low, sizeof f);
    return convert<T>(f);
  }
}

}  // namespace

void fill(const FillArgs& a) {
  visit_dtype(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    T* out = static_cast<T*>(a.out);
    if (a.kind == core::OpKind::kFull) {
      const T v = scalar_as<T>(a.value);
      parallel_for(a.numel, kGrain, a.num_threads,
                   [&](std::int64_t lo, std::int64_t hi) { std::fill(out + lo, out + hi, v); });
      return;
    }
    // Arange: start + i * step, exact in int64 for integer scalars, in double otherwise.
    const bool integral = !a.value.is_floating() && !a.step.is_floating();
    parallel_for(a.numel, kGrain, a.num_threads, [&](std::int64_t lo, std::int64_t hi) {
      if (integral) {
        const auto start = static_cast<std::uint64_t>(a.value.to_int());
        const auto step = static_cast<std::uint64_t>(a.step.to_int());
        for (std::int64_t i = lo; i < hi; ++i) {
          out[i] =
              convert<T>(static_cast<std::int64_t>(start + static_cast<std::uint64_t>(i) * step));
        }
      } else {
        // In double; a float dtype's value rounds through float, f64's is the double itself.
        const double start = a.value.to_double(), step = a.step.to_double();
        for (std::int64_t i = lo; i < hi; ++i) {
          const double v = start + static_cast<double>(i) * step;
          if constexpr (std::is_same_v<T, double>)
            out[i] = v;
          else
            out[i] = convert<T>(static_cast<float>(v));
        }
      }
    });
  });
}

}  // namespace streamfuse::backends::cpu::SF_ISA_NS
