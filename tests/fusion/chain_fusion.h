// Runs a chain of ops unfused, fused-interpreted and fused-compiled, and checks that every mode
// gives the unfused bits and runs the expected number of fused launches per iteration (the
// fusion tests of the builders share it).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "jit/kernel_cache.h"
#include "runtime/device_runtime.h"
#include "streamfuse/streamfuse.h"
#include "tests/tensor_bytes.h"

namespace streamfuse::testing {

using Chain = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

enum Mode { kUnfused, kInterpreted, kCompiled };

struct ChainRun {
  std::vector<std::vector<unsigned char>> results;  // per output of the last iteration
  std::int64_t launches_last = 0;                   // fused launches of the last iteration
  std::int64_t compiled_last = 0;
};

// Runs `chain` over `inputs` several times in `mode`; the last iteration runs plans (and, in the
// compiled mode, kernels) made by the earlier ones.
inline ChainRun run_chain(Mode mode, const Chain& chain, const std::vector<Tensor>& inputs) {
  Config c = config();
  c.fusion = mode != kUnfused;
  c.jit = mode == kCompiled ? JitMode::kCompile : JitMode::kInterpret;
  set_config(c);
  ChainRun r;
  for (int i = 0; i < 4; ++i) {
    synchronize();
    if (auto* cache = runtime::DeviceRuntime::get(Device::cpu()).kernel_cache()) cache->wait_idle();
    const FusionStats before = fusion_stats();
    std::vector<Tensor> outs = chain(inputs);
    r.results.clear();
    for (const Tensor& t : outs) r.results.push_back(bytes_of(t));
    const FusionStats after = fusion_stats();
    r.launches_last = after.compiled_launches + after.interpreted_launches -
                      before.compiled_launches - before.interpreted_launches;
    r.compiled_last = after.compiled_launches - before.compiled_launches;
  }
  return r;
}

class ChainFusionTest : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = config(); }
  void TearDown() override { set_config(saved_); }

  // Every mode gives the unfused bits, and the fused modes run `kernels` launches per iteration
  // (1: the whole chain is one kernel; -1: not checked).
  void check(const std::string& what, const Chain& chain, const std::vector<Tensor>& inputs,
             std::int64_t kernels = 1) {
    SCOPED_TRACE(what);
    for (const Tensor& t : inputs) (void)bytes_of(t);  // made before the chain's segments
    const ChainRun unfused = run_chain(kUnfused, chain, inputs);
    EXPECT_EQ(unfused.launches_last, 0);
    const ChainRun interpreted = run_chain(kInterpreted, chain, inputs);
    EXPECT_EQ(interpreted.results, unfused.results) << "fused, interpreted";
    if (kernels >= 0) {
      EXPECT_EQ(interpreted.launches_last, kernels) << "fused kernels per iteration";
    }
    const std::int64_t failed_before = fusion_stats().kernels_failed;
    const ChainRun compiled = run_chain(kCompiled, chain, inputs);
    EXPECT_EQ(compiled.results, unfused.results) << "fused, compiled";
    // Where the compiler works (it has compiled a kernel), every kernel generated here compiles:
    // a failure would fall back to the interpreter, and the bits above would still match.
    if (fusion_stats().kernels_compiled > 0) {
      EXPECT_EQ(fusion_stats().kernels_failed, failed_before) << "a generated kernel failed";
    }
    if (kernels >= 0) {
      EXPECT_EQ(compiled.launches_last, kernels);
    }
    if (kernels >= 0 && fusion_stats().kernels_failed == 0 && fusion_stats().kernels_compiled > 0) {
      EXPECT_EQ(compiled.compiled_last, kernels) << "the compiled kernel ran";
    }
  }

  Config saved_;
};

}  // namespace streamfuse::testing
