// A GPT-2-style transformer block (bench/gpt2_block.h) at (B, T) = (1, 128), (4, 256), (8, 512):
//
// - BM_Products: the block's six matrix products alone (same shapes, same operand layouts), the
//   floor the block can reach, fusion off and on.
// - BM_Block: the block as a user writes it, fusion off, fused-interpreted and fused-jit (after
//   its kernels are compiled). Counter block_over_products = its time ÷ the products row's time
//   at the same size and fusion (on for both fused modes), from the products row that ran last.
// - BM_BlockFirstIteration: iteration 1 in a fresh process (the benchmark re-executes itself as
//   bench/cold_start_bench does) with an empty cache directory, a warm one (a previous process ran
//   the block), a bundle (saved by a previous process with another cache directory, loaded at
//   start-up into an empty one), and fusion off; counters first_ms, steady_ms (median of
//   kSteadyIterations after warm-up) and first_over_steady, and the child's fusion statistics.
// - BM_BlockDynamic: the block at another (batch, tokens) each call (kDynamicShapes in turn),
//   fusion off and fused-jit.
//
// Every row counts tokens (items/s) and the products' floating-point operations (flops, a rate).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bench/child_runs.h"
#include "bench/fusion_mode.h"
#include "bench/gpt2_block.h"

namespace sf = streamfuse;
namespace fs = std::filesystem;
using sf::bench::FusionMode;

namespace {

struct Size {
  std::int64_t batch, tokens;
};
constexpr Size kSizes[] = {{1, 128}, {4, 256}, {8, 512}};

std::string size_name(int s) {
  return std::to_string(kSizes[s].batch) + "x" + std::to_string(kSizes[s].tokens);
}

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

const sf::bench::BlockWeights& weights() {
  static const sf::bench::BlockWeights w = sf::bench::make_block_weights();
  return w;
}

void set_counters(benchmark::State& state, int s) {
  const double tokens = static_cast<double>(kSizes[s].batch * kSizes[s].tokens);
  state.SetItemsProcessed(static_cast<std::int64_t>(tokens) * state.iterations());
  state.counters["flops"] =
      benchmark::Counter(sf::bench::block_flops(kSizes[s].batch, kSizes[s].tokens),
                         benchmark::Counter::kIsIterationInvariantRate);
}

// The products rows' last time per iteration, in ms, by (size, fusion on).
std::map<std::pair<int, bool>, double>& products_ms() {
  static std::map<std::pair<int, bool>, double> ms;
  return ms;
}

// args: size index, fusion mode (unfused or fused-jit: matmuls are not fused, the mode changes
// only how the recorded ops are processed).
void BM_Products(benchmark::State& state) {
  const int s = static_cast<int>(state.range(0));
  const auto mode = static_cast<FusionMode>(state.range(1));
  sf::bench::use_mode(mode);
  const sf::bench::ProductOperands p =
      sf::bench::make_product_operands(kSizes[s].batch, kSizes[s].tokens);
  sf::Tensor out[6];
  const auto run = [&] {
    sf::bench::products(weights(), p, out);
    return out[0];
  };
  sf::bench::warm_up(run);
  const Clock::time_point start = Clock::now();
  for (auto _ : state) {
    run();
    sf::synchronize();
  }
  products_ms()[{s, mode != sf::bench::kUnfused}] =
      ms_since(start) / static_cast<double>(state.iterations());
  set_counters(state, s);
  state.SetLabel(size_name(s) + "/products/" + sf::bench::mode_name(mode));
}

// args: size index, fusion mode.
void BM_Block(benchmark::State& state) {
  const int s = static_cast<int>(state.range(0));
  const auto mode = static_cast<FusionMode>(state.range(1));
  sf::bench::use_mode(mode);
  sf::manual_seed(3);
  const sf::Tensor x = sf::randn({kSizes[s].batch, kSizes[s].tokens, sf::bench::kChannels});
  const sf::Tensor mask = sf::bench::causal_mask(kSizes[s].tokens);
  const auto run = [&] { return sf::bench::block(weights(), mask, x); };
  sf::bench::warm_up(run);
  const Clock::time_point start = Clock::now();
  for (auto _ : state) {
    sf::Tensor y = run();
    sf::synchronize();
    benchmark::DoNotOptimize(y);
  }
  const double ms = ms_since(start) / static_cast<double>(state.iterations());
  const auto floor = products_ms().find({s, mode != sf::bench::kUnfused});
  if (floor != products_ms().end()) state.counters["block_over_products"] = ms / floor->second;
  set_counters(state, s);
  state.SetLabel(size_name(s) + "/block/" + sf::bench::mode_name(mode));
}

// args: fusion mode. The block at a different (batch, tokens) each call, as a server sees
// requests: kDynamicShapes pairs drawn once (batch 1-4, tokens 1-128, a fixed seed), called in
// turn. Each shape is new to the shape-specialized parts (oneDNN's primitives, kernels' launch
// layouts) until they come round again; the plans, whose sizes are relative, are not.
constexpr int kDynamicShapes = 128;
void BM_BlockDynamic(benchmark::State& state) {
  const auto mode = static_cast<FusionMode>(state.range(0));
  sf::bench::use_mode(mode);
  sf::manual_seed(5);
  std::uint64_t bits = 0x9e3779b97f4a7c15ULL;
  const auto next = [&bits](std::int64_t n) {  // splitmix64, so the shapes are the same anywhere
    bits += 0x9e3779b97f4a7c15ULL;
    std::uint64_t z = bits;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return static_cast<std::int64_t>((z ^ (z >> 31)) % static_cast<std::uint64_t>(n));
  };
  std::vector<std::pair<sf::Tensor, sf::Tensor>> inputs;  // (x, mask) per shape
  double tokens = 0;
  for (int i = 0; i < kDynamicShapes; ++i) {
    const std::int64_t b = 1 + next(4), t = 1 + next(128);
    inputs.emplace_back(sf::randn({b, t, sf::bench::kChannels}), sf::bench::causal_mask(t));
    tokens += static_cast<double>(b * t);
  }
  std::size_t at = 0;
  const auto run = [&] {
    const auto& [x, mask] = inputs[at++ % inputs.size()];
    return sf::bench::block(weights(), mask, x);
  };
  // Every shape once, then the kernels waited for: timed calls run what a long-running server
  // runs, its plans known and kernels compiled, the shapes still changing.
  for (int i = 0; i < kDynamicShapes; ++i) sf::Tensor warm = run();
  sf::bench::warm_up(run);
  for (auto _ : state) {
    sf::Tensor y = run();
    sf::synchronize();
    benchmark::DoNotOptimize(y);
  }
  state.SetItemsProcessed(
      static_cast<std::int64_t>(tokens / kDynamicShapes * static_cast<double>(state.iterations())));
  state.SetLabel(std::string("dynamic shapes/block/") + sf::bench::mode_name(mode));
}

// ---- first iteration in a fresh process --------------------------------------------------------

constexpr int kWarmupIterations = 2;
constexpr int kSteadyIterations = 5;
constexpr std::string_view kResultTag = "block_first_iteration";

std::string arg_value(int argc, char** argv, std::string_view name) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a.starts_with(name) && a.size() > name.size() && a[name.size()] == '=')
      return std::string(a.substr(name.size() + 1));
  }
  return {};
}

// The child: `--child=populate|measure --size=S [--save-bundle=FILE] [--load-bundle=FILE]`.
// Loads the bundle if asked (at start-up, as a model that ships one does), makes the weights and
// input, then times iteration 1 (forward and synchronize), waits for its compiles, and times the
// steady state; saves the bundle if asked. `measure` prints one `block_first_iteration
// key=value ...` line. Returns the exit status.
int run_child(int argc, char** argv) {
  const std::string mode = arg_value(argc, argv, "--child");
  const int s = std::atoi(arg_value(argc, argv, "--size").c_str());
  if ((mode != "populate" && mode != "measure") || s < 0 || s >= std::ssize(kSizes)) {
    std::fprintf(stderr, "block_bench: bad child arguments\n");
    return 2;
  }
  if (const std::string bundle = arg_value(argc, argv, "--load-bundle"); !bundle.empty())
    sf::plans::load_bundle(bundle);
  const sf::Device cpu = sf::Device::cpu();
  sf::manual_seed(3);
  const sf::Tensor x = sf::randn({kSizes[s].batch, kSizes[s].tokens, sf::bench::kChannels});
  const sf::Tensor mask = sf::bench::causal_mask(kSizes[s].tokens);
  const sf::bench::BlockWeights& w = weights();  // synchronizes
  const auto timed_iteration = [&] {
    const Clock::time_point start = Clock::now();
    sf::Tensor y = sf::bench::block(w, mask, x);
    sf::synchronize();
    benchmark::DoNotOptimize(y);
    return ms_since(start);
  };

  const sf::FusionStats before = sf::fusion_stats(cpu);
  const double first_ms = timed_iteration();
  const sf::FusionStats after = sf::fusion_stats(cpu);
  sf::wait_for_compiles(cpu);
  for (int i = 0; i < kWarmupIterations; ++i) timed_iteration();
  if (const std::string bundle = arg_value(argc, argv, "--save-bundle"); !bundle.empty())
    sf::plans::save_bundle(bundle);
  if (mode == "populate") return 0;
  std::vector<double> steady(kSteadyIterations);
  for (double& t : steady) t = timed_iteration();
  std::nth_element(steady.begin(), steady.begin() + kSteadyIterations / 2, steady.end());
  const double steady_ms = steady[kSteadyIterations / 2];

  const sf::FusionStats all = sf::fusion_stats(cpu);
  std::printf(
      "%s first_ms=%.6g steady_ms=%.6g first_over_steady=%.6g plans_explored=%lld "
      "plans_loaded=%lld kernels_compiled=%lld kernels_loaded=%lld ops_prepared=%lld "
      "first_interpreted_launches=%lld first_compiled_launches=%lld\n",
      std::string(kResultTag).c_str(), first_ms, steady_ms, first_ms / steady_ms,
      static_cast<long long>(all.plans_explored), static_cast<long long>(all.plans_loaded),
      static_cast<long long>(all.kernels_compiled), static_cast<long long>(all.kernels_loaded),
      static_cast<long long>(after.ops_prepared),
      static_cast<long long>(after.interpreted_launches - before.interpreted_launches),
      static_cast<long long>(after.compiled_launches - before.compiled_launches));
  std::fflush(stdout);
  return 0;
}

enum class Start : unsigned char { kEmptyCache, kWarmCache, kBundle, kFusionOff };

void BM_BlockFirstIteration(benchmark::State& state, int s, Start start) {
  const std::string size_arg = "--size=" + std::to_string(s);
  const bool fusion = start != Start::kFusionOff;
  for (auto _ : state) {
    const sf::bench::TempDir scratch;
    const fs::path cache = scratch.path() / "cache";
    fs::create_directories(cache);
    std::vector<std::string> measure = {"--child=measure", size_arg};
    if (start == Start::kWarmCache || start == Start::kBundle) {
      // Warm: the earlier run is the same command (its result not read), a program run again,
      // whose cache directory keeps what is keyed by its command line too (the allocator's
      // blocks). Bundle: the earlier run has a cache directory of its own and saves a bundle,
      // which the measured run loads into the empty one.
      std::vector<std::string> earlier = measure;
      fs::path earlier_cache = cache;
      if (start == Start::kBundle) {
        const std::string bundle = (scratch.path() / "block.sfplans").string();
        earlier = {"--child=populate", size_arg, "--save-bundle=" + bundle};
        earlier_cache = scratch.path() / "bundle-cache";
        fs::create_directories(earlier_cache);
        measure.push_back("--load-bundle=" + bundle);
      }
      const sf::bench::ChildRun populate =
          sf::bench::spawn_child("block_bench", earlier, earlier_cache, fusion, scratch.path(), {});
      if (!populate.error.empty()) {
        state.SkipWithError(populate.error.c_str());
        break;
      }
    }
    const sf::bench::ChildRun run =
        sf::bench::spawn_child("block_bench", measure, cache, fusion, scratch.path(), kResultTag);
    if (!run.error.empty()) {
      state.SkipWithError(run.error.c_str());
      break;
    }
    state.SetIterationTime(run.values.at("first_ms") / 1e3);
    for (const auto& [key, value] : run.values) state.counters[key] = value;
  }
}

}  // namespace

BENCHMARK(BM_Products)
    ->ArgsProduct({{0, 1, 2}, {sf::bench::kUnfused, sf::bench::kCompiled}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_Block)
    ->ArgsProduct({{0, 1, 2}, {sf::bench::kUnfused, sf::bench::kInterpreted, sf::bench::kCompiled}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_BlockDynamic)
    ->Arg(sf::bench::kUnfused)
    ->Arg(sf::bench::kCompiled)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]).starts_with("--child=")) {
      try {
        return run_child(argc, argv);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "block_bench child: %s\n", e.what());
        return 1;
      }
    }
  }
  for (int s = 0; s < std::ssize(kSizes); ++s)
    for (const auto& [name, start] :
         {std::pair{"empty_cache", Start::kEmptyCache}, std::pair{"warm_cache", Start::kWarmCache},
          std::pair{"bundle", Start::kBundle}, std::pair{"fusion_off", Start::kFusionOff}})
      benchmark::RegisterBenchmark(("BM_BlockFirstIteration/" + size_name(s) + "/" + name).c_str(),
                                   BM_BlockFirstIteration, s, start)
          ->Iterations(1)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
