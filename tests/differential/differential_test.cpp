// Random programs give the same values eagerly (one op at a time), unfused (queued), fused and
// interpreted, and fused and compiled: bitwise, NaN payloads aside, since every path computes
// each op with the same functions (the math functions' own error is measured against double
// precision in tests/core/vector_math_test.cpp and tests/api/elementwise_test.cpp).
//
// STREAMFUSE_DIFF_PROGRAMS sets how many programs (default 10000, split over the shards) run
// eagerly, unfused and fused-interpreted; STREAMFUSE_DIFF_COMPILED how many of them (default 120)
// also run fused with compiled kernels: each program needs a few kernels of ~50 ms of compiler
// time each, so compiling all 10000 would take hours (run it by hand with a larger value).
// STREAMFUSE_DIFF_SEED=N replays program N alone and prints it.
#include <gtest/gtest.h>

#include <chrono>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "backends/cpu/isa.h"
#include "fusion/plan_codec.h"
#include "jit/cpu_launcher.h"
#include "runtime/device_runtime.h"
#include "tests/differential/random_program.h"

namespace sf = streamfuse;
using sf::testing::RandomProgram;

namespace {

constexpr int kShards = 4;
constexpr int kMaxOps = 64;

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

using Results = std::vector<std::vector<std::vector<std::uint64_t>>>;

void configure(bool fusion, sf::JitMode jit, std::size_t bound) {
  sf::Config c = sf::config();
  c.fusion = fusion;
  c.jit = jit;
  c.queue_bound = bound;
  sf::set_config(c);
}

Results run_all(const std::vector<RandomProgram>& programs) {
  Results r;
  for (const RandomProgram& p : programs) r.push_back(p.run());
  return r;
}

// Reports the first program whose results differ (its seed replays it).
void expect_same(const Results& want, const Results& got, const std::vector<std::uint64_t>& seeds,
                 const std::vector<RandomProgram>& programs, const char* what) {
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (want[i] == got[i]) continue;
    std::string where = "a different number of live values";
    for (std::size_t v = 0; v < want[i].size() && v < got[i].size(); ++v) {
      if (want[i][v] == got[i][v]) continue;
      where = "value v" + std::to_string(want[i][v][0]);
      for (std::size_t e = 1; e < want[i][v].size() && e < got[i][v].size(); ++e)
        if (want[i][v][e] != got[i][v][e]) {
          where += ", element " + std::to_string(e - 1) + ": bits " + std::to_string(got[i][v][e]) +
                   " instead of " + std::to_string(want[i][v][e]);
          break;
        }
      break;
    }
    ADD_FAILURE() << what << " differs for seed " << seeds[i] << " at " << where
                  << " (replay: STREAMFUSE_DIFF_SEED=" << seeds[i] << ")\n"
                  << programs[i].describe();
    return;
  }
}

class DifferentialTest : public ::testing::TestWithParam<int> {};

// differential_test.onednn_avx2 (CMakeLists.txt) runs these programs again with oneDNN held to
// AVX2, for the kernels a CPU without AVX-512 takes. On such a CPU every run takes them, and the
// default run, with more programs, already covers it.
bool held_to_the_isa_this_cpu_has() {
  const char* held = std::getenv("ONEDNN_MAX_CPU_ISA");
  return held && std::string(held) == "AVX2" && sf::backends::cpu::isa_level() < 4;
}

TEST_P(DifferentialTest, EagerUnfusedInterpretedAndCompiledAgree) {
  if (held_to_the_isa_this_cpu_has())
    GTEST_SKIP() << "ONEDNN_MAX_CPU_ISA=AVX2 on a CPU without AVX-512: the default run is this run";
  const sf::Config saved = sf::config();
  std::vector<std::uint64_t> seeds;
  if (const std::uint64_t one = env_or("STREAMFUSE_DIFF_SEED", ~0ull); one != ~0ull) {
    if (GetParam() != 0) GTEST_SKIP() << "replaying one seed on shard 0";
    seeds.push_back(one);
  } else {
    const std::uint64_t total = env_or("STREAMFUSE_DIFF_PROGRAMS", 10000);
    for (std::uint64_t s = static_cast<std::uint64_t>(GetParam()); s < total; s += kShards)
      seeds.push_back(s);
  }
  configure(false, sf::JitMode::kInterpret, 1);
  std::vector<RandomProgram> programs;
  for (std::uint64_t s : seeds) programs.emplace_back(s, kMaxOps);
  if (seeds.size() == 1) std::cout << programs[0].describe();

  const Results eager = run_all(programs);
  configure(false, sf::JitMode::kInterpret, 256);
  expect_same(eager, run_all(programs), seeds, programs, "unfused (queued)");
  configure(true, sf::JitMode::kInterpret, 256);
  const std::int64_t fused_before = sf::fusion_stats().fused_products;
  expect_same(eager, run_all(programs), seeds, programs, "fused, interpreted");
  const std::int64_t fused_products = sf::fusion_stats().fused_products - fused_before;
  std::cout << "products that applied their steps as they were stored: " << fused_products << "\n";
  if (programs.size() >= 1000) {
    EXPECT_GT(fused_products, 0) << "the programs' products fused none of their steps";
  }

  // Replayed: programs as sf::compile'd functions of their host data, called three times: the
  // first explores the plans of the call's segments, the second runs them and keeps a trace, the
  // third replays it. Every call must give eager's bits. A quarter of the programs by default
  // (three calls each cost what the phases above cost together).
  {
    constexpr int kCalls = 3;
    const std::size_t count = std::min<std::size_t>(
        programs.size(), (env_or("STREAMFUSE_DIFF_REPLAYED", 2500) + kShards - 1) / kShards);
    const std::vector<RandomProgram> replayed_programs(
        programs.begin(), programs.begin() + static_cast<std::ptrdiff_t>(count));
    const Results replayed_eager(eager.begin(), eager.begin() + static_cast<std::ptrdiff_t>(count));
    const std::vector<std::uint64_t> replayed_seeds(
        seeds.begin(), seeds.begin() + static_cast<std::ptrdiff_t>(count));
    std::vector<Results> calls(kCalls);
    std::size_t replayed = 0, not_replayable = 0;
    const auto start = std::chrono::steady_clock::now();
    for (const RandomProgram& p : replayed_programs) {
      sf::CompileStats stats;
      auto runs = p.run_compiled(kCalls, &stats);
      for (int c = 0; c < kCalls; ++c) calls[c].push_back(std::move(runs[c]));
      replayed += stats.replayed_calls;
      not_replayable += stats.replays ? 0 : 1;
      if (stats.replayed_calls == 0)
        std::cout << "not replayed: seed " << replayed_seeds[&p - replayed_programs.data()]
                  << " (recorded " << stats.recorded_calls << ", traces " << stats.traces << ")\n";
    }
    for (int c = 0; c < kCalls; ++c)
      expect_same(replayed_eager, calls[c], replayed_seeds, replayed_programs,
                  ("sf::compile, call " + std::to_string(c + 1)).c_str());
    std::cout << "sf::compile calls replayed: " << replayed << " of " << kCalls * count << " in "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
              << " s\n";
    EXPECT_EQ(not_replayable, 0u) << "random programs are all replayable";
    // A full store evicts: plans read from a large shared cache directory (in bulk, per first op,
    // and ahead of need) may evict the plans a program's first call made before its second, so
    // that the second explores again. Then a few programs may not reach their replay.
    const sf::fusion::PlanStore& store =
        sf::runtime::DeviceRuntime::get(sf::Device::cpu()).plan_store();
    if (store.size() < store.capacity())
      EXPECT_GE(replayed, count) << "every program's third call replays";
    else
      EXPECT_GE(replayed * 100, count * 99) << "almost every program's third call replays";
  }

  // Compiled: a first pass requests every kernel; once compiled, the second pass runs them.
  const std::size_t compiled_count = std::min<std::size_t>(
      programs.size(), (env_or("STREAMFUSE_DIFF_COMPILED", 120) + kShards - 1) / kShards);
  programs.erase(programs.begin() + static_cast<std::ptrdiff_t>(compiled_count), programs.end());
  seeds.resize(compiled_count);
  Results eager_compiled(eager.begin(),
                         eager.begin() + static_cast<std::ptrdiff_t>(compiled_count));
  sf::runtime::DeviceRuntime& rt = sf::runtime::DeviceRuntime::get(sf::Device::cpu());
  auto& launcher = dynamic_cast<sf::jit::CpuLauncher&>(rt.launcher());
  configure(true, sf::JitMode::kCompile, 256);
  run_all(programs);
  rt.kernel_cache()->wait_idle();
  const std::uint64_t compiled_before = launcher.compiled_launches();
  expect_same(eager_compiled, run_all(programs), seeds, programs, "fused, compiled");
  if (rt.kernel_cache()->stats().compiled > 0) {
    EXPECT_GT(launcher.compiled_launches(), compiled_before) << "the compiled kernels ran";
    // Where the compiler works, every generated kernel compiles: one that did not would run
    // interpreted, with the same bits, and pass the comparison above.
    EXPECT_EQ(rt.kernel_cache()->stats().failed, 0u) << "generated kernels that did not compile";
  }
  // Every plan made here is one a cache directory or a bundle keeps: it must read back as it was
  // written (a program the checker refused made every process explore it again, unseen).
  std::size_t persisted = 0;
  for (const sf::fusion::PlanRef& plan : rt.plan_store().plans()) {
    if (!plan->optimization || plan->optimization->codec().empty()) continue;
    ++persisted;
    try {
      sf::fusion::decode_plan(sf::fusion::encode_plan(*plan));
    } catch (const std::exception& e) {
      std::string ops;
      for (const sf::core::OpDesc& op : plan->ops) ops += "  " + sf::core::to_string(op) + "\n";
      ADD_FAILURE() << "a plan does not read back: " << e.what() << "\n" << ops;
      break;
    }
  }
  EXPECT_GT(persisted, 0u);
  std::cout << "programs compiled: " << programs.size() << ", plans: " << rt.plan_store().size()
            << ", kernels compiled: " << rt.kernel_cache()->stats().compiled << " in "
            << rt.kernel_cache()->stats().compile_ms << " ms\n";
  sf::set_config(saved);
}

INSTANTIATE_TEST_SUITE_P(Shards, DifferentialTest, ::testing::Range(0, kShards));

}  // namespace
