// Framework overhead: ns per op recorded and executed on 1-element tensors, in steady state.
#include <benchmark/benchmark.h>

#include <vector>

#include <streamfuse/streamfuse.h>

#include "runtime/device_runtime.h"
#include "stream/stream.h"

namespace sf = streamfuse;

namespace {

const char* mode_label(const sf::Config& c) {
  if (!c.fusion) return "fusion off";
  return c.jit == sf::JitMode::kInterpret ? "fusion on, interpreted" : "fusion on";
}

// Records `state.range(0)` element-wise ops (a = (a + b) * c, 2 ops per step, plus the drops
// of the replaced values), then one sync. Reports time per recorded op. range(1): 0 fusion off,
// 1 fusion on (kernels compiled after the first iterations), 2 fusion on with every segment
// interpreted (a program's first iterations, while its kernels compile).
void BM_OpOverhead(benchmark::State& state) {
  sf::Config c = sf::config();
  c.fusion = state.range(1) != 0;
  c.jit = state.range(1) == 2 ? sf::JitMode::kInterpret : sf::JitMode::kCompile;
  sf::set_config(c);
  const std::int64_t steps = state.range(0) / 2;
  const sf::Tensor b = sf::full({1}, 0.5f);
  sf::stream::Stream* stream =
      sf::runtime::DeviceRuntime::get(sf::Device::cpu()).streams().current();
  const std::uint64_t recorded_before = stream->next_seq();
  for (auto _ : state) {
    sf::Tensor a = sf::ones({1});
    for (std::int64_t i = 0; i < steps; ++i) a = (a + b) * 0.5f;
    sf::synchronize();
    benchmark::DoNotOptimize(a);
  }
  // Stream ops per API op: each step also records the drops of the values it replaces.
  const double recorded = static_cast<double>(stream->next_seq() - recorded_before);
  state.counters["stream_ops_per_op"] =
      recorded / static_cast<double>(state.iterations() * steps * 2);
  state.SetItemsProcessed(state.iterations() * steps * 2);
  // Seconds per op, shown with an SI prefix (e.g. 450n = 450 ns).
  state.counters["time_per_op"] =
      benchmark::Counter(static_cast<double>(state.iterations() * steps * 2),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.SetLabel(mode_label(c));
}

// The same chain as BM_OpOverhead inside sf::compile: the first calls record it, later ones
// replay its segments without recording or matching (issue 18). range(0): ops per call.
void BM_Replay(benchmark::State& state) {
  sf::Config c = sf::config();
  c.fusion = true;
  c.jit = sf::JitMode::kCompile;
  sf::set_config(c);
  const std::int64_t steps = state.range(0) / 2;
  const sf::Tensor b = sf::full({1}, 0.5f);
  auto chain = sf::compile(
      [steps](sf::Tensor a, const sf::Tensor& b) {
        for (std::int64_t i = 0; i < steps; ++i) a = (a + b) * 0.5f;
        return a;
      },
      {.name = "BM_Replay chain"});
  const sf::Tensor one = sf::ones({1});
  for (int warm = 0; warm < 3; ++warm) benchmark::DoNotOptimize(chain(one, b).item<float>());
  sf::wait_for_compiles();
  for (int warm = 0; warm < 3; ++warm) benchmark::DoNotOptimize(chain(one, b).item<float>());
  const sf::CompileStats before = chain.stats();
  for (auto _ : state) {
    sf::Tensor a = chain(one, b);
    sf::synchronize();
    benchmark::DoNotOptimize(a);
  }
  const sf::CompileStats after = chain.stats();
  state.counters["replayed"] = static_cast<double>(after.replayed_calls - before.replayed_calls) /
                               static_cast<double>(state.iterations());
  state.counters["time_per_op"] =
      benchmark::Counter(static_cast<double>(state.iterations() * steps * 2),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.SetLabel("sf::compile, replayed");
}

// The small-model rows' modes, range(0): as BM_OpOverhead's range(1), and 3: fused and
// compiled, inside sf::compile (replayed). `step(replayed)` runs one iteration, its result read
// or synchronized; 100 run first, then the compiles are waited for.
template <class Step>
void run_small(benchmark::State& state, Step step) {
  sf::Config c = sf::config();
  const sf::Config saved = c;
  c.fusion = state.range(0) != 0;
  c.jit = state.range(0) == 2 ? sf::JitMode::kInterpret : sf::JitMode::kCompile;
  sf::set_config(c);
  const bool replayed = state.range(0) == 3;
  for (int warm = 0; warm < 100; ++warm) step(replayed);
  sf::wait_for_compiles();
  for (auto _ : state) step(replayed);
  state.SetLabel(replayed ? "sf::compile, replayed" : mode_label(c));
  sf::set_config(saved);
}

// A softmax of 8 elements per iteration, then a sync: a reduction plan whose tensors are tiny,
// so the time is the framework's (fused plans against the five ops run one by one).
void BM_TinySoftmax(benchmark::State& state) {
  const sf::Tensor x = sf::randn({1, 8});
  auto compiled = sf::compile([](const sf::Tensor& v) { return sf::nn::softmax(v, -1); });
  run_small(state, [&](bool replayed) {
    sf::Tensor y = replayed ? compiled(x) : sf::nn::softmax(x, -1);
    sf::synchronize();
    benchmark::DoNotOptimize(y);
  });
}

// A small residual MLP as a user writes one: 4 layers of h + gelu(layer_norm(h) @ w + b) on
// [4, 32] f32, then a row sum read on the host. Tiny products, normalizations and activations:
// the time is the framework's and the products' call overhead.
void BM_TinyMlp(benchmark::State& state) {
  constexpr int kWidth = 32, kLayers = 4;
  sf::manual_seed(1);
  std::vector<sf::Tensor> weights;
  for (int l = 0; l < kLayers; ++l) {
    weights.push_back(sf::randn({kWidth, kWidth}) * 0.2f);
    weights.push_back(sf::randn({kWidth}) * 0.1f);
  }
  const sf::Tensor x = sf::randn({4, kWidth});
  const auto mlp = [](const sf::Tensor& in, const std::vector<sf::Tensor>& w) {
    sf::Tensor h = in;
    for (std::size_t l = 0; l < w.size(); l += 2)
      h = h + sf::nn::gelu(sf::matmul(sf::nn::layer_norm(h, {kWidth}), w[l]) + w[l + 1]);
    return h.sum(-1);
  };
  auto compiled = sf::compile(mlp);
  run_small(state, [&](bool replayed) {
    benchmark::DoNotOptimize(
        (replayed ? compiled(x, weights) : mlp(x, weights)).to_vector<float>());
  });
}

// Ops no builder takes: a reshape, a permute and a slice of a [16, 64] tensor, then a sync. Each
// view (and each drop of the one before) runs as a segment of its own, so the time is what a
// segment of one op costs fused (matching, its plan's bookkeeping) against running it directly.
void BM_ViewOps(benchmark::State& state) {
  const sf::Tensor x = sf::randn({16, 64});
  run_small(state, [&](bool) {
    sf::Tensor y = x.reshape({16, 4, 16}).permute({1, 0, 2}).slice(2, 0, 8);
    sf::synchronize();
    benchmark::DoNotOptimize(y);
  });
}

// Recording alone: ops queued against a huge bound, the sync outside the timed region.
void BM_RecordOnly(benchmark::State& state) {
  sf::Config c = sf::config();
  const sf::Config saved = c;
  c.queue_bound = 1 << 20;
  sf::set_config(c);
  const sf::Tensor b = sf::full({1}, 0.5f);
  sf::Tensor a = sf::ones({1});
  std::int64_t ops = 0;
  for (auto _ : state) {
    a = a + b;
    if (++ops % 4096 == 0) {
      state.PauseTiming();
      sf::synchronize();
      state.ResumeTiming();
    }
  }
  sf::synchronize();
  sf::set_config(saved);
  state.SetItemsProcessed(state.iterations());
}

}  // namespace

// Plans that share a first op (issue 18): chain k is `x = a + b` then 12 steps, each `x * 0.5`
// or `x + 0.25` by the bits of k, then x.item(): 13 recorded ops, all of 1-element tensors so
// that the time is the framework's. The rows run in increasing K in one process: each first
// runs its new chains until their plans exist, so the store holds K plans starting with the
// same op, then times chains drawn at random among the K. Fused kernels are interpreted (2,000
// chains would be 2,000 kernels to compile; at one element a kernel's own time is the same
// small part either way). Reports ns per recorded op.
void BM_ManyPlans(benchmark::State& state) {
  const std::int64_t plans = state.range(0);
  sf::Config c = sf::config();
  const sf::Config saved = c;
  c.fusion = state.range(1) != 0;
  c.jit = sf::JitMode::kInterpret;
  sf::set_config(c);
  const sf::Tensor a = sf::full({1}, 1.0f), b = sf::full({1}, 0.5f);
  const auto chain = [&](std::int64_t k) {
    sf::Tensor x = a + b;
    for (int step = 0; step < 12; ++step) x = (k >> step & 1) ? x * 0.5f : x + 0.25f;
    return x.item<float>();
  };
  for (int round = 0; round < 3; ++round)
    for (std::int64_t k = 0; k < plans; ++k) benchmark::DoNotOptimize(chain(k));
  std::uint64_t draw = 0x9e3779b97f4a7c15ull;
  for (auto _ : state) {
    draw ^= draw << 13, draw ^= draw >> 7, draw ^= draw << 17;  // xorshift: a random mix
    benchmark::DoNotOptimize(
        chain(static_cast<std::int64_t>(draw % static_cast<std::uint64_t>(plans))));
  }
  state.counters["plans"] =
      static_cast<double>(sf::runtime::DeviceRuntime::get(sf::Device::cpu()).plan_store().size());
  state.counters["time_per_op"] =
      benchmark::Counter(static_cast<double>(state.iterations() * 13),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.SetLabel(mode_label(c));
  sf::set_config(saved);
}

BENCHMARK(BM_OpOverhead)->ArgsProduct({{10000}, {0, 1, 2}})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Replay)->Arg(10000)->Arg(26)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ManyPlans)
    ->ArgsProduct({{1, 64, 512, 2000}, {1}})
    ->Args({2000, 0})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TinySoftmax)->DenseRange(0, 3)->Unit(benchmark::kNanosecond);
BENCHMARK(BM_TinyMlp)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ViewOps)->DenseRange(0, 1)->Unit(benchmark::kNanosecond);
BENCHMARK(BM_RecordOnly)->Unit(benchmark::kNanosecond);
BENCHMARK_MAIN();
