// Normalizations and reductions as models write them (issue 15's table, and two over an inner
// axis, whose rows are strided): through streamfuse unfused, fused-interpreted and fused-jit,
// beside the floor (an OpenMP pass over the same bytes: a copy where the result is as large as
// the input, a read where it is one value per row) and oneDNN's primitive where it has one
// (softmax, layer normalization). Bytes processed = input
// read + output written; every row of one case processes the same bytes, so time ÷ floor time is
// the number of passes over memory.
#include <benchmark/benchmark.h>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench/copy_floor.h"
#include "bench/fusion_mode.h"

namespace sf = streamfuse;

namespace {

enum Case {
  kSoftmaxScores,
  kLayerNorm2048,
  kLayerNorm768,
  kRmsNorm2048,
  kSumSquares,
  kSoftmaxSmall,
  kSoftmaxInner,  // over an inner axis: kernels walk column tiles
  kCenterColumns,
  kMaskedScores,  // attention's scores as users scale and mask them (a causal mask)
  kCenterNarrow,  // over axis 0 of rows of 512: many short steps per column tile
  kColumnNorm     // batch normalization's statistics over axis 0: two stages, three passes
};

struct CaseInfo {
  const char* name;
  sf::Shape shape;
  bool reduces_rows;  // the result is one value per row: the floor reads the input once
};

const CaseInfo kCases[] = {
    {"softmax [8,12,512,512]", {8, 12, 512, 512}, false},
    {"layer_norm [16384,2048]", {16384, 2048}, false},
    {"layer_norm [4096,768]", {4096, 768}, false},
    {"rms_norm [16384,2048]", {16384, 2048}, false},
    {"sum(x*x, -1) [16384,2048]", {16384, 2048}, true},
    {"softmax [32,12,128,128]", {32, 12, 128, 128}, false},
    {"softmax(x, 1) [64,512,256]", {64, 512, 256}, false},
    {"x - mean(x, 0) [4096,4096]", {4096, 4096}, false},
    {"softmax(where(causal, x * 0.125, -inf)) [8,12,512,512]", {8, 12, 512, 512}, false},
    {"x - mean(x, 0) [32768,512]", {32768, 512}, false},
    {"(x - mean(x, 0)) * rsqrt(var(x, 0) + eps) [16384,2048]", {16384, 2048}, false},
};

std::int64_t row_length(Case c) { return kCases[c].shape[kCases[c].shape.rank() - 1]; }

double bytes(Case c) {
  const double in = static_cast<double>(kCases[c].shape.numel()) * sizeof(float);
  return kCases[c].reduces_rows ? in + in / static_cast<double>(row_length(c)) : 2 * in;
}

struct Inputs {
  sf::Tensor x, w, b;
  sf::Tensor mask;  // [n, n] bool, true where a key's position <= the query's (kMaskedScores)
};

// Each case's input (randn) and affine parameters, made once.
const Inputs& inputs(Case c) {
  static std::map<Case, Inputs> made;
  auto it = made.find(c);
  if (it == made.end()) {
    sf::manual_seed(static_cast<std::uint64_t>(c));
    const std::int64_t n = row_length(c);
    Inputs in{sf::randn(kCases[c].shape), sf::randn({n}), sf::randn({n}), {}};
    if (c == kMaskedScores)
      in.mask = sf::unsqueeze(sf::arange(n), 1) >= sf::unsqueeze(sf::arange(n), 0);
    sf::synchronize();
    it = made.emplace(c, std::move(in)).first;
  }
  return it->second;
}

// The case as a user writes it.
sf::Tensor compute(Case c, const Inputs& in) {
  switch (c) {
    case kSoftmaxScores:
    case kSoftmaxSmall:
      return sf::nn::softmax(in.x, -1);
    case kLayerNorm2048:
    case kLayerNorm768:
      return sf::nn::layer_norm(in.x, {row_length(c)}, in.w, in.b);
    case kRmsNorm2048:
      return in.x * sf::rsqrt(sf::mean(in.x * in.x, -1, true) + 1e-6f) * in.w;
    case kSumSquares:
      return sf::sum(in.x * in.x, -1);
    case kSoftmaxInner:
      return sf::nn::softmax(in.x, 1);
    case kCenterColumns:
    case kCenterNarrow:
      return in.x - sf::mean(in.x, 0, true);
    case kColumnNorm: {
      const sf::Tensor d = in.x - sf::mean(in.x, 0, true);
      return d * sf::rsqrt(sf::mean(d * d, 0, true) + 1e-5f);
    }
    case kMaskedScores:
      return sf::nn::softmax(sf::where(in.mask, in.x * 0.125f, -INFINITY), -1);
  }
  return {};
}

using sf::bench::FusionMode;

// args: case, mode (bench/fusion_mode.h).
void BM_Norm(benchmark::State& state) {
  const auto c = static_cast<Case>(state.range(0));
  const auto mode = static_cast<FusionMode>(state.range(1));
  sf::bench::use_mode(mode);
  const Inputs& in = inputs(c);
  sf::bench::warm_up([&] { return compute(c, in); });
  for (auto _ : state) {
    sf::Tensor y = compute(c, in);
    sf::synchronize();
    benchmark::DoNotOptimize(y);
  }
  state.SetBytesProcessed(
      static_cast<std::int64_t>(static_cast<double>(state.iterations()) * bytes(c)));
  state.SetLabel(std::string(kCases[c].name) + "/" + sf::bench::mode_name(mode));
}

// The floor: one pass over the bytes, on every core (a copy, or for row reductions a read).
void BM_Floor(benchmark::State& state) {
  const auto c = static_cast<Case>(state.range(0));
  const std::vector<float> x = inputs(c).x.to_vector<float>();
  const auto n = static_cast<std::int64_t>(x.size());
  std::vector<float> y(kCases[c].reduces_rows ? 0 : x.size());
  const int threads = omp_get_max_threads();
  for (auto _ : state) {
    double total = 0;
    if (kCases[c].reduces_rows) {
#pragma omp parallel num_threads(threads) reduction(+ : total)
      {
        const std::int64_t t = omp_get_thread_num(), chunk = (n + threads - 1) / threads;
        const std::int64_t lo = std::min(n, t * chunk), hi = std::min(n, lo + chunk);
        float lanes[16] = {};
        std::int64_t i = lo;
        for (; i + 16 <= hi; i += 16)
          for (int l = 0; l < 16; ++l) lanes[l] += x[static_cast<std::size_t>(i + l)];
        for (; i < hi; ++i) lanes[0] += x[static_cast<std::size_t>(i)];
        for (float v : lanes) total += v;
      }
    } else {
      sf::bench::parallel_copy(x.data(), y.data(), n);
    }
    benchmark::DoNotOptimize(total);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(
      static_cast<std::int64_t>(static_cast<double>(state.iterations()) * bytes(c)));
  state.SetLabel(std::string(kCases[c].name) + "/floor");
}

// oneDNN's softmax (last axis) or layer normalization (scale and shift) on the same input.
void BM_OneDnn(benchmark::State& state) {
  using namespace dnnl;
  const auto c = static_cast<Case>(state.range(0));
  const Inputs& in = inputs(c);
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  const sf::Shape& shape = kCases[c].shape;
  memory::dims dims;
  for (int d = 0; d < shape.rank(); ++d) dims.push_back(shape[d]);
  std::vector<float> x = in.x.to_vector<float>(), y(x.size());
  std::vector<float> w = in.w.to_vector<float>(), b = in.b.to_vector<float>();
  primitive p;
  std::unordered_map<int, memory> args;
  if (c == kSoftmaxScores || c == kSoftmaxSmall || c == kSoftmaxInner) {
    const memory::desc d(dims, memory::data_type::f32,
                         shape.rank() == 4 ? memory::format_tag::abcd : memory::format_tag::abc);
    const int axis = c == kSoftmaxInner ? 1 : shape.rank() - 1;
    p = softmax_forward(softmax_forward::primitive_desc(
        softmax_forward::desc(prop_kind::forward_inference, d, axis), eng));
    args = {{DNNL_ARG_SRC, memory(d, eng, x.data())}, {DNNL_ARG_DST, memory(d, eng, y.data())}};
  } else {
    const memory::desc d(dims, memory::data_type::f32, memory::format_tag::ab);
    const memory::desc pd({row_length(c)}, memory::data_type::f32, memory::format_tag::a);
    p = layer_normalization_forward(layer_normalization_forward::primitive_desc(
        layer_normalization_forward::desc(
            prop_kind::forward_inference, d, 1e-5f,
            normalization_flags::use_scale | normalization_flags::use_shift),
        eng));
    args = {{DNNL_ARG_SRC, memory(d, eng, x.data())},
            {DNNL_ARG_DST, memory(d, eng, y.data())},
            {DNNL_ARG_SCALE, memory(pd, eng, w.data())},
            {DNNL_ARG_SHIFT, memory(pd, eng, b.data())}};
  }
  for (auto _ : state) {
    p.execute(s, args);
    s.wait();
  }
  state.SetBytesProcessed(
      static_cast<std::int64_t>(static_cast<double>(state.iterations()) * bytes(c)));
  state.SetLabel(std::string(kCases[c].name) + "/oneDNN");
}

}  // namespace

BENCHMARK(BM_Norm)
    ->ArgsProduct({{kSoftmaxScores, kLayerNorm2048, kLayerNorm768, kRmsNorm2048, kSumSquares,
                    kSoftmaxSmall, kSoftmaxInner, kCenterColumns, kMaskedScores, kCenterNarrow,
                    kColumnNorm},
                   {sf::bench::kUnfused, sf::bench::kInterpreted, sf::bench::kCompiled}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_Floor)
    ->DenseRange(kSoftmaxScores, kColumnNorm)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_OneDnn)
    ->Arg(kSoftmaxScores)
    ->Arg(kLayerNorm2048)
    ->Arg(kLayerNorm768)
    ->Arg(kSoftmaxSmall)
    ->Arg(kSoftmaxInner)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_MAIN();
