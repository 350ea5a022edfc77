// Reads at indices feeding element-wise ops, as models write them: token embeddings plus
// positions (GPT-2's input, 8 x 512 tokens), a quantized embedding dequantized as it is read
// (i8 rows times a per-row scale), and a gather along the last axis feeding an activation.
// Fusion off, fused-interpreted and fused-jit: fused, the read at indices is the first load of
// the element-wise kernel (jit kLoadAt), so the gathered tensor is never written.
//
//   index_bench [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <functional>
#include <string>
#include <vector>

#include "bench/fusion_mode.h"

namespace sf = streamfuse;

namespace {

struct Case {
  const char* name;
  std::function<sf::Tensor()> run;
};

sf::Tensor random_ids(sf::Shape shape, std::int64_t bound) {
  return (sf::rand(shape) * static_cast<float>(bound)).to(sf::kI64);
}

const std::vector<Case>& cases() {
  static const auto* all = [] {
    sf::manual_seed(5);
    auto* v = new std::vector<Case>;
    const sf::Tensor wte = sf::randn({50257, 768}) * 0.02f, wpe = sf::randn({512, 768}) * 0.01f;
    const sf::Tensor tokens = random_ids({8, 512}, 50257);
    v->push_back({"embedding [50257,768] of [8,512] + positions",
                  [=] { return sf::embedding(wte, tokens) + wpe; }});
    const sf::Tensor q = (sf::randn({32000, 1024}) * 40.0f).to(sf::kI8);
    const sf::Tensor scale = sf::rand({32000, 1}) * 0.01f;
    const sf::Tensor ids = random_ids({4096}, 32000);
    v->push_back({"i8 embedding [32000,1024] of 4096, dequantized",
                  [=] { return sf::embedding(q, ids).to(sf::kF32) * sf::embedding(scale, ids); }});
    const sf::Tensor x = sf::randn({4096, 1024});
    const sf::Tensor index = random_ids({4096, 512}, 1024);
    v->push_back({"relu(gather(x [4096,1024], 1, [4096,512]) * 2)",
                  [=] { return sf::relu(sf::gather(x, 1, index) * 2.0f); }});
    return v;
  }();
  return *all;
}

void BM_Index(benchmark::State& state) {
  const Case& c = cases()[static_cast<std::size_t>(state.range(0))];
  const auto mode = static_cast<sf::bench::FusionMode>(state.range(1));
  sf::bench::use_mode(mode);
  sf::synchronize();
  sf::bench::warm_up(c.run);
  for (auto _ : state) {
    sf::Tensor y = c.run();
    sf::synchronize();
    benchmark::DoNotOptimize(y);
  }
  state.SetLabel(std::string(c.name) + ", " + sf::bench::mode_name(mode));
}

void all_rows(benchmark::internal::Benchmark* b) {
  for (int c = 0; c < static_cast<int>(cases().size()); ++c)
    for (int mode : {sf::bench::kUnfused, sf::bench::kInterpreted, sf::bench::kCompiled})
      b->Args({c, mode});
}

BENCHMARK(BM_Index)->Apply(all_rows)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
