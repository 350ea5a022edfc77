// Convolutions and pools as a CNN writes them (ResNet-style stages at batch 8, f32): conv2d with a
// bias and relu (the bias add and relu fuse into one element-wise kernel after the product),
// a depthwise conv, a strided 1x1 projection, and the pools; fusion off and fused-jit. The same
// layers in PyTorch eager: bench/conv_peer.py (its rows print in the same units).
#include <benchmark/benchmark.h>

#include <functional>
#include <string>
#include <vector>

#include "bench/fusion_mode.h"

namespace sf = streamfuse;

namespace {

struct Layer {
  const char* name;
  std::function<sf::Tensor(const sf::Tensor& x)> run;
  sf::Shape input;
};

const std::vector<Layer>& layers() {
  static const auto* all = [] {
    sf::manual_seed(3);
    auto* v = new std::vector<Layer>;
    const sf::Tensor w64 = sf::randn({64, 64, 3, 3}) * 0.05f, b64 = sf::randn({64});
    const sf::Tensor w7 = sf::randn({64, 3, 7, 7}) * 0.05f;
    const sf::Tensor dw = sf::randn({128, 1, 3, 3}) * 0.3f;
    const sf::Tensor w1x1 = sf::randn({128, 64, 1, 1}) * 0.1f;
    v->push_back({"conv7x7 s2 3->64 224 + relu",
                  [=](const sf::Tensor& x) {
                    return sf::relu(sf::nn::conv2d(x, w7, b64, {.stride = {2, 2}, .padding = {3, 3}}));
                  },
                  {8, 3, 224, 224}});
    v->push_back({"conv3x3 64->64 56 + bias + relu",
                  [=](const sf::Tensor& x) {
                    return sf::relu(sf::nn::conv2d(x, w64, b64, {.padding = {1, 1}}));
                  },
                  {8, 64, 56, 56}});
    v->push_back({"conv1x1 s2 64->128 56",
                  [=](const sf::Tensor& x) {
                    return sf::nn::conv2d(x, w1x1, std::nullopt, {.stride = {2, 2}});
                  },
                  {8, 64, 56, 56}});
    v->push_back({"depthwise3x3 128 28",
                  [=](const sf::Tensor& x) {
                    return sf::nn::conv2d(x, dw, std::nullopt, {.padding = {1, 1}, .groups = 128});
                  },
                  {8, 128, 28, 28}});
    v->push_back({"max_pool3x3 s2 64 112",
                  [](const sf::Tensor& x) {
                    return sf::nn::max_pool2d(x, {3, 3}, {.stride = {2, 2}, .padding = {1, 1}});
                  },
                  {8, 64, 112, 112}});
    v->push_back({"avg_pool2x2 64 56",
                  [](const sf::Tensor& x) { return sf::nn::avg_pool2d(x, {2, 2}); },
                  {8, 64, 56, 56}});
    return v;
  }();
  return *all;
}

void BM_Layer(benchmark::State& state) {
  const Layer& layer = layers()[static_cast<std::size_t>(state.range(0))];
  const auto mode = static_cast<sf::bench::FusionMode>(state.range(1));
  sf::bench::use_mode(mode);
  const sf::Tensor x = sf::randn(layer.input);
  sf::synchronize();
  sf::bench::warm_up([&] { return layer.run(x); });
  for (auto _ : state) {
    sf::Tensor y = layer.run(x);
    sf::synchronize();
    benchmark::DoNotOptimize(y);
  }
  state.SetLabel(std::string(layer.name) + ", " + sf::bench::mode_name(mode));
}

void all_rows(benchmark::internal::Benchmark* b) {
  for (int layer = 0; layer < static_cast<int>(layers().size()); ++layer)
    for (int mode : {sf::bench::kUnfused, sf::bench::kCompiled}) b->Args({layer, mode});
}

BENCHMARK(BM_Layer)->Apply(all_rows)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
