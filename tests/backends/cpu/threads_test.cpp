// The thread count of CPU ops beside the process's background work (core/busy_cores.h): all the
// cores asked for while none is busy, the cores left while a compile keeps one busy, never none;
// and matrix products that give the same bits either way.
#include <gtest/gtest.h>

#include <streamfuse/streamfuse.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/kernels/parallel.h"
#include "core/busy_cores.h"

namespace streamfuse::backends::cpu {
namespace {

TEST(ThreadsBesideBackground, NothingBusyKeepsWhatWasAsked) {
  ASSERT_EQ(core::busy_cores(), 0);
  EXPECT_EQ(threads_beside_background(0), 0);  // 0 still means every core
  EXPECT_EQ(threads_beside_background(3), 3);
}

TEST(ThreadsBesideBackground, ABusyCoreLeavesTheOthers) {
  const int all = default_threads();
  std::optional<core::BusyCore> compiling;
  compiling.emplace();
  EXPECT_EQ(core::busy_cores(), 1);
  EXPECT_EQ(threads_beside_background(0), std::max(1, all - 1));
  EXPECT_EQ(threads_beside_background(1), 1);  // fewer asked than left: what was asked
  EXPECT_EQ(threads_beside_background(all + 4), std::max(1, all - 1));
  {
    core::BusyCore second, third;
    for (int asked : {0, 1, all})
      EXPECT_GE(threads_beside_background(asked), 1) << "never no thread at all";
    EXPECT_EQ(threads_beside_background(0), std::max(1, all - 3));
  }
  EXPECT_EQ(core::busy_cores(), 1);
  compiling.reset();
  EXPECT_EQ(core::busy_cores(), 0);
  EXPECT_EQ(threads_beside_background(0), 0);
}

// A product's bits must not depend on whether a kernel was compiling while it ran. The library's
// own kernels give the same bits on any thread count; oneDNN's GEMM driver (every f32 product of
// a CPU without AVX-512) splits k over its threads for some shapes, so oneDNN's products keep the
// configured count. Both kinds are here: 8 and 15 columns and few rows go to oneDNN on every CPU,
// x @ W^T below AVX-512. (On such a CPU, run beside the busy core, 64x256x8, 64x768x15 and
// 33x100x50 @ W^T gave other bits.)
TEST(ThreadsBesideBackground, ProductsGiveTheSameBitsWhileACoreIsBusy) {
  struct Size {
    std::int64_t m, k, n;
    bool transposed;  // W stored [n, k], as nn.Linear stores it
  };
  const Config saved = config();
  Config c = saved;
  c.fusion = false;
  c.num_threads = 2;
  set_config(c);
  manual_seed(5);
  for (const Size s : {Size{64, 256, 8, false}, Size{64, 768, 15, false}, Size{4, 768, 64, false},
                       Size{33, 100, 50, true}, Size{64, 64, 64, true}, Size{128, 256, 16, true},
                       Size{128, 96, 200, false}, Size{8, 48, 8, false}}) {
    SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n) +
                 (s.transposed ? " @ W^T" : " @ W"));
    const Tensor x = randn({s.m, s.k});
    const Tensor w = s.transposed ? transpose(randn({s.n, s.k}), 0, 1) : randn({s.k, s.n});
    const std::vector<float> alone = matmul(x, w).to_vector<float>();
    std::vector<float> beside;
    {
      core::BusyCore compiling;
      beside = matmul(x, w).to_vector<float>();
    }
    ASSERT_EQ(alone.size(), beside.size());
    EXPECT_EQ(std::memcmp(alone.data(), beside.data(), alone.size() * sizeof(float)), 0);
  }
  set_config(saved);
}

}  // namespace
}  // namespace streamfuse::backends::cpu
