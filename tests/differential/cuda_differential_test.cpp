// Random programs give the CPU's values on a CUDA device, unfused (every op a one-op kernel or a
// library kernel) and fused: bitwise, NaN payloads aside. CUDA kernels compute each op with the
// CPU's functions (the kernel prelude); compiled with --fmad=false and fma where the CPU's ISA
// level has it, they round the same way. Reductions instantiate one template on both
// (core/reduce_math.h): the same accumulators folded in the same order.
//
// Runs on cuda:0 and skips without one; CI runs it on the emulated GPU
// (tests/backends/cuda/emulator). STREAMFUSE_DIFF_CUDA_PROGRAMS sets how many programs (default
// 60: under emulation each new kernel is a host compiler run); STREAMFUSE_DIFF_SEED replays one.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tests/differential/random_program.h"

namespace sf = streamfuse;
using sf::testing::RandomProgram;

namespace {

constexpr int kMaxOps = 48;

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

void set_fusion(bool on) {
  sf::Config c = sf::config();
  c.fusion = on;
  sf::set_config(c);
}

class CudaDifferentialTest : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      sf::synchronize(sf::Device::cuda(0));
    } catch (const sf::DeviceError& e) {
      GTEST_SKIP() << e.what();
    }
  }
};

// Where two results differ first, for the failure message.
std::string first_difference(const std::vector<std::vector<std::uint64_t>>& want,
                             const std::vector<std::vector<std::uint64_t>>& got) {
  if (want.size() != got.size()) return "a different number of live values";
  for (std::size_t v = 0; v < want.size(); ++v) {
    if (want[v] == got[v]) continue;
    std::string where = "value v" + std::to_string(want[v][0]);
    for (std::size_t e = 1; e < want[v].size() && e < got[v].size(); ++e)
      if (want[v][e] != got[v][e])
        return where + ", element " + std::to_string(e - 1) + ": bits " +
               std::to_string(got[v][e]) + " instead of " + std::to_string(want[v][e]);
    return where + ": a different size";
  }
  return "nowhere";
}

TEST_F(CudaDifferentialTest, UnfusedAndFusedMatchTheCpu) {
  const sf::Config saved = sf::config();
  std::vector<std::uint64_t> seeds;
  if (const std::uint64_t one = env_or("STREAMFUSE_DIFF_SEED", ~0ull); one != ~0ull)
    seeds.push_back(one);
  else
    for (std::uint64_t s = 0; s < env_or("STREAMFUSE_DIFF_CUDA_PROGRAMS", 60); ++s)
      seeds.push_back(s);
  int failures = 0;
  for (std::uint64_t seed : seeds) {
    set_fusion(true);
    // No products: cuBLAS sums in another order than oneDNN (no bitwise match to the CPU), and
    // the emulated GPU has no cuBLAS at all.
    const RandomProgram program(seed, kMaxOps, /*products=*/false);
    const auto cpu = program.run(sf::Device::cpu());
    for (bool fusion : {false, true}) {
      set_fusion(fusion);
      const auto cuda = program.run(sf::Device::cuda(0));
      if (cuda == cpu) continue;
      ADD_FAILURE() << (fusion ? "fused" : "unfused") << " on cuda:0 differs for seed " << seed
                    << " at " << first_difference(cpu, cuda)
                    << " (replay: STREAMFUSE_DIFF_SEED=" << seed << ")\n"
                    << program.describe();
      if (++failures == 3) break;
    }
    if (failures >= 3) break;
  }
  sf::set_config(saved);
}

}  // namespace
