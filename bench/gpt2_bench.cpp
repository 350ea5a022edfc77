// GPT-2 small (examples/gpt2: 12 layers, C = 768, vocabulary 50257) with seeded random weights:
// prefill of 128 and 512 tokens, and the latency of one decoded token at contexts of 128 and
// 1024, with fusion off and fused (compiled); beside the floor of decoding, one read of the
// weights at the machine's copy bandwidth (decoding one token reads every weight once: it is
// memory-bound). bench/gpt2_peer.py runs the same model in PyTorch eager.
//
//   gpt2_bench [--benchmark_filter=...]
// The weights are made in memory (the same as gpt2_make_weights writes for seed 1).
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench/fusion_mode.h"
#include "gpt2.h"

namespace sf = streamfuse;
using sf::bench::FusionMode;

namespace {

gpt2::Model& model() {
  static gpt2::Model* m = new gpt2::Model(gpt2::random_weights(gpt2::Config{}, 1));
  return *m;
}

std::vector<std::int64_t> tokens(std::int64_t n) {
  std::vector<std::int64_t> ids(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) ids[static_cast<std::size_t>(i)] = (i * 7919 + 13) % 50257;
  return ids;
}

// Prefill: the prompt's tokens through every layer, the last token's logits read.
void BM_Prefill(benchmark::State& state) {
  const auto mode = static_cast<FusionMode>(state.range(0));
  const std::int64_t n = state.range(1);
  sf::bench::use_mode(mode);
  gpt2::Model& m = model();
  const std::vector<std::int64_t> prompt = tokens(n);
  const auto run = [&] {
    m.reset();
    return m.forward(prompt);
  };
  sf::bench::warm_up(run);
  for (auto _ : state) {
    sf::Tensor logits = run();
    benchmark::DoNotOptimize(gpt2::greedy_token(logits));
  }
  state.SetLabel(std::string("prefill ") + std::to_string(n) + "/" + sf::bench::mode_name(mode));
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(n * state.iterations()), benchmark::Counter::kIsRate);
}

// Decode: one token at a context of `n` (the cache holds n - 1 tokens), its argmax read as
// greedy generation does. Each iteration rewinds the cache by one position, so every one sees
// the same context.
void BM_Decode(benchmark::State& state) {
  const auto mode = static_cast<FusionMode>(state.range(0));
  const std::int64_t n = state.range(1);
  sf::bench::use_mode(mode);
  gpt2::Model& m = model();
  m.reset();
  const std::vector<std::int64_t> prompt = tokens(n - 1);
  sf::Tensor first = m.forward(prompt);
  benchmark::DoNotOptimize(gpt2::greedy_token(first));
  const std::int64_t context = m.position();
  const auto step = [&] {
    m.rewind(context);
    return m.forward({42});
  };
  sf::bench::warm_up(step);
  for (auto _ : state) {
    sf::Tensor logits = step();
    benchmark::DoNotOptimize(gpt2::greedy_token(logits));
  }
  state.SetLabel(std::string("decode at ") + std::to_string(n) + "/" + sf::bench::mode_name(mode));
}

// The floor of a decode step: every weight read once. A read of GPT-2 small's 498 MB of f32
// parameters on every core (BM_WeightsRead), and a copy of them (BM_WeightsCopy: reads and
// writes, for the "copy bandwidth" the target names).
constexpr std::size_t kWeightBytes = 124'439'808ull * 4;

void BM_WeightsRead(benchmark::State& state) {
  const std::size_t words = kWeightBytes / 8;
  std::vector<std::uint64_t> w(words, 1);
  for (auto _ : state) {
    std::uint64_t total = 0;
#pragma omp parallel for reduction(+ : total) schedule(static)
    for (std::size_t i = 0; i < words; ++i) total += w[i];
    benchmark::DoNotOptimize(total);
  }
  state.SetLabel("one read of the weights' bytes, all cores");
  state.SetBytesProcessed(static_cast<std::int64_t>(kWeightBytes) * state.iterations());
}

void BM_WeightsCopy(benchmark::State& state) {
  std::vector<char> from(kWeightBytes, 1), to(kWeightBytes, 0);
  for (auto _ : state) {
    std::memcpy(to.data(), from.data(), kWeightBytes);
    benchmark::DoNotOptimize(to.data());
    benchmark::ClobberMemory();
  }
  state.SetLabel("a copy of the weights' bytes");
  state.SetBytesProcessed(static_cast<std::int64_t>(kWeightBytes) * state.iterations());
}

BENCHMARK(BM_Prefill)
    ->ArgsProduct({{sf::bench::kUnfused, sf::bench::kCompiled}, {128, 512}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(1.0);
BENCHMARK(BM_Decode)
    ->ArgsProduct({{sf::bench::kUnfused, sf::bench::kCompiled}, {128, 1024}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(1.0);
BENCHMARK(BM_WeightsRead)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_WeightsCopy)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);

}  // namespace

BENCHMARK_MAIN();
