// rand() and randn(): Philox4x32-10, a counter-based generator, so element i's value depends
// only on (seed, offset, i) and any thread can produce any range.
#include <algorithm>
#include <bit>

#include "backends/cpu/kernels/convert.h"
#include "backends/cpu/kernels/isa_namespace.h"
#include "backends/cpu/kernels/kernels.h"
#include "backends/cpu/kernels/parallel.h"
#include "core/vector_math.h"

namespace streamfuse::backends::cpu::SF_ISA_NS {
namespace {

constexpr std::int64_t kGrain = 16384;
constexpr std::int64_t kBlock = 256;  // counters per inner block: 1024 values

struct Words {
  std::uint32_t w[4];
};

// Philox4x32 with 10 rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3").
inline Words philox(std::uint64_t counter, std::uint64_t seed) {
  std::uint32_t c0 = static_cast<std::uint32_t>(counter),
                c1 = static_cast<std::uint32_t>(counter >> 32);
  std::uint32_t c2 = 0, c3 = 0;
  std::uint32_t k0 = static_cast<std::uint32_t>(seed), k1 = static_cast<std::uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = std::uint64_t{0xD2511F53u} * c0;
    const std::uint64_t p1 = std::uint64_t{0xCD9E8D57u} * c2;
    const std::uint32_t n0 = static_cast<std::uint32_t>(p1 >> 32) ^ c1 ^ k0;
    const std::uint32_t n2 = static_cast<std::uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c0 = n0;
    c1 = static_cast<std::uint32_t>(p1);
    c2 = n2;
    c3 = static_cast<std::uint32_t>(p0);
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {{c0, c1, c2, c3}};
}

// [0, 1) with 24 random bits: every value is a float, none rounds up to 1.
inline float uniform01(std::uint32_t w) { return static_cast<float>(w >> 8) * 0x1p-24f; }

// Four values per counter: uniform in [a, b), or two Box-Muller pairs with mean a and std b.
void generate(const RandomArgs& r, std::int64_t counter, float* out) {
  const Words w = philox(r.offset + static_cast<std::uint64_t>(counter), r.seed);
  const float a = static_cast<float>(r.a), b = static_cast<float>(r.b);
  if (r.kind == core::OpKind::kRandUniform) {
    for (int j = 0; j < 4; ++j) out[j] = a + uniform01(w.w[j]) * (b - a);
    return;
  }
  for (int pair = 0; pair < 2; ++pair) {
    const float u1 = static_cast<float>((w.w[2 * pair] >> 8) + 1) * 0x1p-24f;  // (0, 1]: log finite
    const float u2 = uniform01(w.w[2 * pair + 1]);
    const float radius = __builtin_sqrtf(-2.0f * sf_log(u1));
    const float angle = 6.2831853071795864769f * u2;
    out[2 * pair] = a + b * radius * sf_cos(angle);
    out[2 * pair + 1] = a + b * radius * sf_sin(angle);
  }
}

}  // namespace

// Values are drawn as floats and converted to the dtype: an f64 tensor holds the f32 draws
// widened (24 random bits where PyTorch's double draws have 53), so one seed gives the same
// numbers in every float dtype.
void random(const RandomArgs& r) {
  const std::int64_t counters = (r.numel + 3) / 4;
  visit_dtype(r.dtype, [&](auto tag) {
    using T = decltype(tag);
    T* out = static_cast<T*>(r.out);
    parallel_for(counters, kGrain / 4, r.num_threads, [&](std::int64_t lo, std::int64_t hi) {
      alignas(64) float values[kBlock * 4];
      for (std::int64_t c0 = lo; c0 < hi; c0 += kBlock) {
        const std::int64_t c1 = std::min(hi, c0 + kBlock);
        for (std::int64_t c = c0; c < c1; ++c) generate(r, c, values + (c - c0) * 4);
        const std::int64_t first = c0 * 4, last = std::min(r.numel, c1 * 4);
        for (std::int64_t i = first; i < last; ++i) {
          T v = convert<T>(values[i - first]);
          if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
            // Rounding to 16 bits may reach the open upper bound of rand(): step back below it.
            if (r.kind == core::OpKind::kRandUniform &&
                convert<float>(v) >= static_cast<float>(r.b))
              v.bits = static_cast<std::uint16_t>(v.bits - 1);
          }
          out[i] = v;
        }
      }
    });
  });
}

}  // namespace streamfuse::backends::cpu::SF_ISA_NS
