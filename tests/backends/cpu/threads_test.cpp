// The thread count of CPU ops beside the process's background work (core/busy_cores.h): all the
// cores asked for while none is busy, the cores left while a compile keeps one busy, never none.
#include <gtest/gtest.h>

#include <optional>

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

}  // namespace
}  // namespace streamfuse::backends::cpu
