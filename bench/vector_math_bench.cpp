// Throughput of core/vector_math.h over a 4096-float array (the auto-vectorized loop an
// eager kernel runs), beside the C library's float functions on the same data.
//
// Run: build/bench/vector_math_bench --benchmark_counters_tabular=true
#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

#include <benchmark/benchmark.h>

#include "core/vector_math.h"

namespace {

constexpr size_t kSize = 4096;

std::vector<float> uniform(float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(kSize);
  for (float& x : v) x = dist(rng);
  return v;
}

template <typename Fn>
void run_unary(benchmark::State& state, float lo, float hi, Fn fn) {
  std::vector<float> in = uniform(lo, hi, 1), out(kSize);
  for (auto _ : state) {
    const float* __restrict pin = in.data();
    float* __restrict pout = out.data();
    for (size_t i = 0; i < kSize; ++i) pout[i] = fn(pin[i]);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kSize));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kSize * 2 * sizeof(float)));
}

template <typename Fn>
void run_binary(benchmark::State& state, Fn fn) {
  std::vector<float> x = uniform(0.0f, 100.0f, 1), y = uniform(-10.0f, 10.0f, 2), out(kSize);
  for (auto _ : state) {
    const float* __restrict px = x.data();
    const float* __restrict py = y.data();
    float* __restrict pout = out.data();
    for (size_t i = 0; i < kSize; ++i) pout[i] = fn(px[i], py[i]);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kSize));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kSize * 3 * sizeof(float)));
}

// Each function is benchmarked on the range where a model meets it.
#define SF_BENCH_UNARY(name, sf, libm, lo, hi)           \
  void BM_sf_##name(benchmark::State& s) {               \
    run_unary(s, lo, hi, [](float x) { return sf(x); }); \
  }                                                      \
  void BM_std_##name(benchmark::State& s) {              \
    run_unary(s, lo, hi, [](float x) { return libm; });  \
  }                                                      \
  BENCHMARK(BM_sf_##name);                               \
  BENCHMARK(BM_std_##name);

SF_BENCH_UNARY(exp, sf_exp, std::exp(x), -80.0f, 80.0f)
SF_BENCH_UNARY(log, sf_log, std::log(x), 1e-6f, 1e6f)
SF_BENCH_UNARY(erf, sf_erf, std::erf(x), -4.0f, 4.0f)
SF_BENCH_UNARY(tanh, sf_tanh, std::tanh(x), -10.0f, 10.0f)
SF_BENCH_UNARY(sin, sf_sin, std::sin(x), -100.0f, 100.0f)
SF_BENCH_UNARY(cos, sf_cos, std::cos(x), -100.0f, 100.0f)
SF_BENCH_UNARY(sin_huge, sf_sin, std::sin(x), -1e30f, 1e30f)
SF_BENCH_UNARY(sigmoid, sf_sigmoid, 1.0f / (1.0f + std::exp(-x)), -20.0f, 20.0f)
#undef SF_BENCH_UNARY

void BM_sf_pow(benchmark::State& s) {
  run_binary(s, [](float x, float y) { return sf_pow(x, y); });
}
void BM_std_pow(benchmark::State& s) {
  run_binary(s, [](float x, float y) { return std::pow(x, y); });
}
BENCHMARK(BM_sf_pow);
BENCHMARK(BM_std_pow);

}  // namespace

BENCHMARK_MAIN();
