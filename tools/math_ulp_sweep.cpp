// Exhaustive accuracy sweep of core/vector_math.h: every one of the 2^32 float inputs of
// each unary function (and random pairs for pow) against the C library in double precision.
//
// Usage: math-ulp-sweep [function...] [--pow-samples N]
// Prints one line per function: the maximum error in ulp, the input where it occurs, how many
// results are more than 1 ulp off, and how many disagree on NaN / infinity / the sign of zero.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <omp.h>

#include "core/vector_math.h"

namespace {

constexpr double kSpecialMismatch = std::numeric_limits<double>::infinity();

// |result - ref| in units of the float ulp at ref (denormal ulp 2^-149); infinity when the two
// disagree on NaN, infinity or the sign of zero.
double ulp_error(float result, double ref) {
  if (std::isnan(ref) || std::isnan(result)) {
    return std::isnan(ref) && std::isnan(result) ? 0.0 : kSpecialMismatch;
  }
  float ref_f = static_cast<float>(ref);
  if (std::isinf(result)) return result == ref_f ? 0.0 : kSpecialMismatch;
  if (ref == 0.0) {
    return result == 0.0f && std::signbit(result) == std::signbit(ref) ? 0.0 : kSpecialMismatch;
  }
  double a = std::fabs(ref);
  int exp = a > 0x1.fffffep127 ? 127 : std::max(std::ilogb(a), -126);
  return std::fabs(static_cast<double>(result) - ref) / std::ldexp(1.0, exp - 23);
}

struct Stats {
  double max_ulp = 0.0;
  float arg_x = 0.0f;
  float arg_y = 0.0f;
  uint64_t over_one = 0;
  uint64_t special = 0;
  uint64_t count = 0;

  void add(double err, float x, float y) {
    ++count;
    if (err == kSpecialMismatch) {
      if (special++ == 0) std::fprintf(stderr, "  special-value mismatch at x=%a y=%a\n", x, y);
      return;
    }
    if (err > 1.0) ++over_one;
    if (err > max_ulp) {
      max_ulp = err;
      arg_x = x;
      arg_y = y;
    }
  }
  void merge(const Stats& o) {
    if (o.max_ulp > max_ulp) {
      max_ulp = o.max_ulp;
      arg_x = o.arg_x;
      arg_y = o.arg_y;
    }
    over_one += o.over_one;
    special += o.special;
    count += o.count;
  }
};

void print(const char* name, const Stats& s, bool binary) {
  char arg[96];
  if (binary) {
    std::snprintf(arg, sizeof arg, "(%.9g, %.9g)", s.arg_x, s.arg_y);
  } else {
    std::snprintf(arg, sizeof arg, "%.9g (%a)", s.arg_x, s.arg_x);
  }
  std::printf("%-8s max %.4f ulp at %-36s >1ulp: %-10llu special mismatches: %llu of %llu\n", name,
              s.max_ulp, arg, static_cast<unsigned long long>(s.over_one),
              static_cast<unsigned long long>(s.special), static_cast<unsigned long long>(s.count));
  std::fflush(stdout);
}

// Blocks of inputs go through the function in a plain loop (the vectorized code path, as the
// kernels run it), then are compared one by one with the reference.
template <typename F, typename R>
Stats sweep_unary(F fn, R ref) {
  constexpr uint64_t kBlock = 1 << 16;
  constexpr uint64_t kBlocks = (uint64_t{1} << 32) / kBlock;
  Stats total;
#pragma omp parallel
  {
    Stats local;
    std::vector<float> in(kBlock), out(kBlock);
#pragma omp for schedule(dynamic, 16)
    for (uint64_t b = 0; b < kBlocks; ++b) {
      for (uint64_t i = 0; i < kBlock; ++i) {
        uint32_t bits = static_cast<uint32_t>(b * kBlock + i);
        std::memcpy(&in[i], &bits, 4);
      }
      const float* pin = in.data();
      float* pout = out.data();
      for (uint64_t i = 0; i < kBlock; ++i) pout[i] = fn(pin[i]);
      for (uint64_t i = 0; i < kBlock; ++i) local.add(ulp_error(out[i], ref(in[i])), in[i], 0.0f);
    }
#pragma omp critical
    total.merge(local);
  }
  return total;
}

// pow: a quarter fully random bit patterns, the rest x with a moderate exponent and y drawn so
// that |y log2 x| < 160 (the finite and denormal range), a sixteenth of those with y an integer.
Stats sweep_pow(uint64_t samples) {
  constexpr uint64_t kBlock = 1 << 16;
  uint64_t blocks = (samples + kBlock - 1) / kBlock;
  Stats total;
#pragma omp parallel
  {
    Stats local;
    std::vector<float> xs(kBlock), ys(kBlock), out(kBlock);
#pragma omp for schedule(dynamic, 4)
    for (uint64_t b = 0; b < blocks; ++b) {
      std::mt19937_64 rng(0x5eed0000 + b);
      for (uint64_t i = 0; i < kBlock; ++i) {
        uint64_t bits = rng();
        uint32_t xb = static_cast<uint32_t>(bits), yb = static_cast<uint32_t>(bits >> 32);
        float x, y;
        std::memcpy(&x, &xb, 4);
        std::memcpy(&y, &yb, 4);
        if ((i & 3) != 0) {
          // x = ±m * 2^e, e in [-40, 40]; near 1 one time in four.
          uint32_t e = 127 - 40 + static_cast<uint32_t>(rng() % 81);
          if ((i & 12) == 0) e = 126 + (rng() & 1);
          uint32_t sign = (i & 16) ? 0x80000000u : 0u;
          xb = sign | (e << 23) | (xb & 0x7fffffu);
          std::memcpy(&x, &xb, 4);
          double l = std::fabs(std::log2(std::fabs(static_cast<double>(x))));
          double lim = l > 0 ? 160.0 / l : 1e30;
          if (lim > 3e38) lim = 3e38;
          double u = std::ldexp(static_cast<double>(rng() >> 11), -53) * 2.0 - 1.0;
          y = static_cast<float>(u * lim);
          if ((i & 15) == 1 || sign) y = std::nearbyint(y);
        }
        xs[i] = x;
        ys[i] = y;
      }
      const float* px = xs.data();
      const float* py = ys.data();
      float* po = out.data();
      for (uint64_t i = 0; i < kBlock; ++i) po[i] = sf_pow(px[i], py[i]);
      for (uint64_t i = 0; i < kBlock; ++i) {
        double ref = std::pow(static_cast<double>(xs[i]), static_cast<double>(ys[i]));
        local.add(ulp_error(out[i], ref), xs[i], ys[i]);
      }
    }
#pragma omp critical
    total.merge(local);
  }
  return total;
}

double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }

}  // namespace

int main(int argc, char** argv) {
  // Built for x86-64-v4 (tools/CMakeLists.txt): say so instead of dying on an illegal instruction.
  __builtin_cpu_init();
  if (!(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))) {
    std::fprintf(stderr,
                 "math-ulp-sweep: built for x86-64-v4; this CPU lacks AVX-512 F/BW/DQ/VL\n");
    return 2;
  }
  std::vector<std::string> want;
  uint64_t pow_samples = uint64_t{1} << 28;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--pow-samples") == 0 && i + 1 < argc) {
      pow_samples = std::strtoull(argv[++i], nullptr, 0);
    } else {
      want.push_back(argv[i]);
    }
  }
  auto wanted = [&](const char* name) {
    if (want.empty()) return true;
    for (const auto& w : want) {
      if (w == name) return true;
    }
    return false;
  };
  std::printf("vector_math ulp sweep, %d threads, %s\n", omp_get_max_threads(),
#if defined(__FMA__)
              "FMA"
#else
              "no FMA"
#endif
  );
#define SF_SWEEP(name, fn, ref)                                             \
  if (wanted(name)) {                                                       \
    print(name,                                                             \
          sweep_unary([](float x) { return fn(x); },                        \
                      [](float x) { return ref(static_cast<double>(x)); }), \
          false);                                                           \
  }
  SF_SWEEP("exp", sf_exp, std::exp)
  SF_SWEEP("log", sf_log, std::log)
  SF_SWEEP("erf", sf_erf, std::erf)
  SF_SWEEP("tanh", sf_tanh, std::tanh)
  SF_SWEEP("sigmoid", sf_sigmoid, sigmoid_ref)
  SF_SWEEP("sin", sf_sin, std::sin)
  SF_SWEEP("cos", sf_cos, std::cos)
#undef SF_SWEEP
  if (wanted("pow")) print("pow", sweep_pow(pow_samples), true);
  return 0;
}
