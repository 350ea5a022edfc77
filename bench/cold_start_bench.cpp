// Cold start: the first iteration of a model-like program in a fresh process, against its steady
// state, with an empty cache directory, a warm one, a loaded bundle, and fusion off.
//
// The program: two residual 2-layer MLP blocks (bias, GELU, layer norm), batch 64, ~50 stream
// ops an iteration. Each scenario runs in new processes: the benchmark re-executes itself with
// `--child=populate` (runs the model, waits for its compiles, optionally saves a bundle; the
// warm-cache scenario's earlier run is a `--child=measure` instead) and `--child=measure` (the
// measured run), with STREAMFUSE_CACHE_DIR (a fresh temporary directory)
// and STREAMFUSE_FUSION set for the child. The measuring child prints one line,
// `cold_start_result key=value ...`, that the parent turns into counters. The benchmark's time is
// the first iteration's (manual time, one iteration a run; use --benchmark_repetitions).
//
// Counters: first_ms (iteration 1: forward and synchronize), steady_ms (median of 30 after
// warm-up), hot_after_ms (wait_for_compiles after iteration 1), setup_ms (process start to inputs
// ready), load_ms (load_bundle), the fusion statistics of the whole child process, and
// first_interpreted_launches / first_compiled_launches (fused launches of iteration 1).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <streamfuse/streamfuse.h>

#include "bench/child_runs.h"
#include "runtime/device_runtime.h"
#include "stream/stream.h"

namespace sf = streamfuse;
namespace fs = std::filesystem;

namespace {

using sf::bench::ChildRun;
using sf::bench::spawn_child;
using sf::bench::TempDir;

// ---- the model, as the child runs it ---------------------------------------------------------

constexpr std::int64_t kBatch = 64;
constexpr std::int64_t kModel = 512;
constexpr std::int64_t kHidden = 2048;
constexpr int kBlocks = 2;  // two blocks of ~23 stream ops: ~50 ops an iteration
constexpr int kWarmupIterations = 5;
constexpr int kSteadyIterations = 30;
constexpr std::string_view kResultTag = "cold_start_result";

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

struct Block {
  sf::Tensor w1, b1, w2, b2, gamma, beta;
};
struct Model {
  sf::Tensor x;
  std::vector<Block> blocks;
};

// Standard-normal input and parameters from a fixed seed, made before anything is timed.
Model make_model() {
  sf::manual_seed(42);
  Model m{sf::randn({kBatch, kModel}), {}};
  for (int i = 0; i < kBlocks; ++i)
    m.blocks.push_back({sf::randn({kModel, kHidden}), sf::randn({kHidden}),
                        sf::randn({kHidden, kModel}), sf::randn({kModel}), sf::randn({kModel}),
                        sf::randn({kModel})});
  sf::synchronize();
  return m;
}

// Residual 2-layer MLP blocks with layer norm, `r = layer_norm(r + mlp(r))`. The matmuls'
// outputs are scaled by 1/sqrt(fan-in), as an initializer would scale standard-normal weights.
sf::Tensor forward(const Model& m) {
  const float s1 = static_cast<float>(1.0 / std::sqrt(static_cast<double>(kModel)));
  const float s2 = static_cast<float>(1.0 / std::sqrt(static_cast<double>(kHidden)));
  sf::Tensor r = m.x;
  for (const Block& b : m.blocks) {
    sf::Tensor h = sf::nn::gelu(sf::matmul(r, b.w1) * s1 + b.b1);
    sf::Tensor y = sf::matmul(std::move(h), b.w2) * s2 + b.b2;
    r = sf::nn::layer_norm(std::move(r) + std::move(y), {kModel}, b.gamma, b.beta);
  }
  return r;
}

// One iteration: the forward pass, run to completion. Returns its time in ms.
double timed_iteration(const Model& m) {
  const Clock::time_point start = Clock::now();
  {
    sf::Tensor out = forward(m);
    sf::synchronize();
    benchmark::DoNotOptimize(out);
  }
  return ms_since(start);
}

std::string arg_value(int argc, char** argv, std::string_view name) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a.size() > name.size() && a.substr(0, name.size()) == name && a[name.size()] == '=')
      return std::string(a.substr(name.size() + 1));
  }
  return {};
}

// The child: `--child=populate|measure`, `--save-bundle=FILE` (populate), `--load-bundle=FILE`
// (measure). Returns the process's exit status.
int run_child(int argc, char** argv) {
  const Clock::time_point process_start = Clock::now();
  const std::string mode = arg_value(argc, argv, "--child");
  const std::string save_bundle = arg_value(argc, argv, "--save-bundle");
  const std::string load_bundle = arg_value(argc, argv, "--load-bundle");
  if (mode != "populate" && mode != "measure") {
    std::fprintf(stderr, "cold_start_bench: unknown --child=%s\n", mode.c_str());
    return 2;
  }
  const sf::Device device = sf::Device::cpu();
  double load_ms = 0;
  if (!load_bundle.empty()) {  // at start-up, as a model that ships its bundle does
    const Clock::time_point start = Clock::now();
    sf::plans::load_bundle(load_bundle);
    load_ms = ms_since(start);
  }
  const Model m = make_model();
  const double setup_ms = ms_since(process_start);

  const sf::FusionStats before_first = sf::fusion_stats(device);
  const sf::MemoryStats memory_before = sf::memory_stats(device);
  const double first_ms = timed_iteration(m);
  const sf::FusionStats after_first = sf::fusion_stats(device);
  const sf::MemoryStats memory_after = sf::memory_stats(device);
  // Until every kernel the first iteration asked for is compiled (0 when none was).
  const Clock::time_point start = Clock::now();
  sf::wait_for_compiles(device);
  const double hot_after_ms = ms_since(start);

  for (int i = 0; i < kWarmupIterations; ++i) timed_iteration(m);
  sf::stream::Stream* stream = sf::runtime::DeviceRuntime::get(device).streams().current();
  const std::uint64_t recorded_before = stream->next_seq();
  std::vector<double> steady(kSteadyIterations);
  for (double& t : steady) t = timed_iteration(m);
  const double ops_per_iteration =
      static_cast<double>(stream->next_seq() - recorded_before) / kSteadyIterations;
  std::nth_element(steady.begin(), steady.begin() + kSteadyIterations / 2, steady.end());
  const double steady_ms = steady[kSteadyIterations / 2];

  if (!save_bundle.empty()) {
    sf::wait_for_compiles(device);
    sf::plans::save_bundle(save_bundle);
  }
  if (mode == "populate") return 0;

  const sf::FusionStats s = sf::fusion_stats(device);
  const std::map<std::string, double> result = {
      {"first_ms", first_ms},
      {"steady_ms", steady_ms},
      {"first_over_steady", first_ms / steady_ms},
      {"hot_after_ms", hot_after_ms},
      {"setup_ms", setup_ms},
      {"load_ms", load_ms},
      {"ops_per_iteration", ops_per_iteration},
      {"plans", static_cast<double>(s.plans)},
      {"plans_explored", static_cast<double>(s.plans_explored)},
      {"plans_loaded", static_cast<double>(s.plans_loaded)},
      {"kernels_compiled", static_cast<double>(s.kernels_compiled)},
      {"kernels_loaded", static_cast<double>(s.kernels_loaded)},
      {"kernels_failed", static_cast<double>(s.kernels_failed)},
      {"ops_prepared", static_cast<double>(after_first.ops_prepared)},
      {"compile_ms", s.compile_ms},
      {"compile_ms_per_kernel",
       s.kernels_compiled > 0 ? s.compile_ms / static_cast<double>(s.kernels_compiled) : 0.0},
      {"first_interpreted_launches",
       static_cast<double>(after_first.interpreted_launches - before_first.interpreted_launches)},
      {"first_compiled_launches",
       static_cast<double>(after_first.compiled_launches - before_first.compiled_launches)},
      // Blocks the first iteration took from the system (its pages faulted in and cleared then)
      // rather than from those the allocator held or made ahead.
      {"first_fresh_blocks",
       static_cast<double>((memory_after.allocations - memory_after.cache_hits) -
                           (memory_before.allocations - memory_before.cache_hits))},
  };
  std::printf("%.*s", static_cast<int>(kResultTag.size()), kResultTag.data());
  for (const auto& [key, value] : result) std::printf(" %s=%.9g", key.c_str(), value);
  std::printf("\n");
  std::fflush(stdout);
  return 0;
}

// ---- the parent: spawning children and reading their results --------------------------------

enum class Scenario : unsigned char { kEmptyCache, kWarmCache, kBundle, kFusionOff };

void BM_ColdStart(benchmark::State& state, Scenario scenario) {
  for (auto _ : state) {
    const TempDir scratch;
    const fs::path dir_a = scratch.path() / "cache-a", dir_b = scratch.path() / "cache-b";
    const fs::path bundle = scratch.path() / "model.sfplans";
    fs::create_directories(dir_a);
    fs::create_directories(dir_b);

    const bool fusion = scenario != Scenario::kFusionOff;
    std::vector<std::string> measure_args = {"--child=measure"};
    fs::path measure_dir = dir_a;
    if (scenario == Scenario::kWarmCache || scenario == Scenario::kBundle) {
      // A warm cache is the same program run again: the earlier child has the measured child's
      // command line, so that what the cache keeps per program (the blocks its last run held,
      // prepared/<device>.<program>.blocks) is found as a program run twice finds it. A bundle
      // carries plans and kernels only, so its earlier child need not match.
      std::vector<std::string> populate_args = scenario == Scenario::kWarmCache
                                                   ? measure_args
                                                   : std::vector<std::string>{"--child=populate"};
      if (scenario == Scenario::kBundle) {
        populate_args.push_back("--save-bundle=" + bundle.string());
        measure_args.push_back("--load-bundle=" + bundle.string());
        measure_dir = dir_b;
      }
      const ChildRun populate =
          spawn_child("cold_start_bench", populate_args, dir_a, fusion, scratch.path(), {});
      if (!populate.error.empty()) {
        state.SkipWithError(populate.error.c_str());
        break;
      }
    }
    const ChildRun run = spawn_child("cold_start_bench", measure_args, measure_dir, fusion,
                                     scratch.path(), kResultTag);
    if (!run.error.empty()) {
      state.SkipWithError(run.error.c_str());
      break;
    }
    state.SetIterationTime(run.values.at("first_ms") / 1e3);
    for (const auto& [key, value] : run.values) state.counters[key] = value;
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]).starts_with("--child=")) {
      try {
        return run_child(argc, argv);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "cold_start_bench child: %s\n", e.what());
        return 1;
      }
    }
  }
  for (const auto& [name, scenario] :
       {std::pair{"empty_cache", Scenario::kEmptyCache},
        std::pair{"warm_cache", Scenario::kWarmCache}, std::pair{"bundle", Scenario::kBundle},
        std::pair{"fusion_off", Scenario::kFusionOff}})
    benchmark::RegisterBenchmark((std::string("BM_ColdStart/") + name).c_str(), BM_ColdStart,
                                 scenario)
        ->Iterations(1)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
