// GELU from Burn's fusion benchmark, f32 (32, 512, 2048): three formulations through streamfuse,
// beside oneDNN's gelu_erf primitive and a hand-written single-pass loop (the bandwidth limit).
// Bytes processed = input read + output written. Peak memory is reported as a counter.
#include <benchmark/benchmark.h>

#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "bench/fusion_mode.h"
#include "bench/gelu_hand_loop.h"
#include "bench/gelu_variants.h"

namespace sf = streamfuse;
using sf::bench::GeluVariant;

namespace {

const sf::Shape kShape{32, 512, 2048};
constexpr std::int64_t kNumel = 32 * 512 * 2048;
constexpr double kBytes = 2.0 * kNumel * sizeof(float);

const sf::Tensor& input() {
  static const sf::Tensor x = [] {
    sf::manual_seed(0);
    sf::Tensor t = sf::randn(kShape);
    sf::synchronize();
    return t;
  }();
  return x;
}

using sf::bench::FusionMode;

// args: variant, mode (bench/fusion_mode.h).
void BM_Gelu(benchmark::State& state) {
  const auto variant = static_cast<GeluVariant>(state.range(0));
  const auto mode = static_cast<FusionMode>(state.range(1));
  sf::bench::use_mode(mode);
  const sf::Tensor& x = input();
  sf::bench::warm_up([&] { return sf::bench::gelu(x, variant); });
  sf::synchronize();  // runs the warm-up tensors' drops, so the baseline holds only x
  sf::reset_peak_memory_stats();
  const std::int64_t base = sf::memory_stats().bytes_in_use;
  for (auto _ : state) {
    sf::Tensor y = sf::bench::gelu(x, variant);
    sf::synchronize();
    benchmark::DoNotOptimize(y);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kBytes));
  const double io = 2.0 * kNumel * sizeof(float);
  state.counters["peak_over_io"] =
      (static_cast<double>(sf::memory_stats().peak_bytes_in_use - base) + kNumel * sizeof(float)) /
      io;
  state.SetLabel(std::string(sf::bench::variant_name(variant)) + "/" + sf::bench::mode_name(mode));
}

// oneDNN's own GELU (erf form), one primitive over the flat tensor.
void BM_OneDnnGeluErf(benchmark::State& state) {
  using namespace dnnl;
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  const memory::desc md({kNumel}, memory::data_type::f32, memory::format_tag::a);
  std::vector<float> x = input().to_vector<float>(), y(x.size());
  memory src(md, eng, x.data()), dst(md, eng, y.data());
  const eltwise_forward::primitive_desc pd(
      eltwise_forward::desc(prop_kind::forward_inference, algorithm::eltwise_gelu_erf, md, 0.f,
                            0.f),
      eng);
  eltwise_forward gelu(pd);
  for (auto _ : state) {
    gelu.execute(s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
    s.wait();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kBytes));
}

void BM_HandWrittenLoop(benchmark::State& state) {
  const std::vector<float> x = input().to_vector<float>();
  std::vector<float> y(x.size());
  const int threads = omp_get_max_threads();
  for (auto _ : state) {
    sf::bench::gelu_hand_loop(x.data(), y.data(), kNumel, threads);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kBytes));
}

}  // namespace

BENCHMARK(BM_Gelu)
    ->ArgsProduct({{0, 1, 2}, {sf::bench::kUnfused, sf::bench::kInterpreted, sf::bench::kCompiled}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_OneDnnGeluErf)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_HandWrittenLoop)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_MAIN();
