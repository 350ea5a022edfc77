// View stride arithmetic.
#include <gtest/gtest.h>

#include "backends/backend.h"
#include "backends/cpu/views.h"

namespace cpu = streamfuse::backends::cpu;
using streamfuse::Shape;
using streamfuse::backends::contiguous_strides;

namespace {

cpu::Strides strides(std::initializer_list<std::int64_t> s) {
  cpu::Strides out{};
  std::size_t i = 0;
  for (auto v : s) out[i++] = v;
  return out;
}

TEST(ViewsTest, ContiguousReshapesAreViews) {
  const auto s = cpu::reshape_strides({2, 3, 4}, contiguous_strides({2, 3, 4}), {6, 4});
  ASSERT_TRUE(s);
  EXPECT_EQ(*s, strides({4, 1}));
  EXPECT_EQ(*cpu::reshape_strides({6}, strides({1}), {2, 1, 3}), strides({3, 3, 1}));
}

TEST(ViewsTest, TransposedLayoutsViewOnlyAlongCompatibleChunks) {
  // [3, 2] transposed from [2, 3]: strides (1, 3).
  EXPECT_FALSE(cpu::reshape_strides({3, 2}, strides({1, 3}), {6}));
  // Splitting a dimension of a transposed layout is still a view.
  const auto s = cpu::reshape_strides({4, 6}, strides({1, 4}), {4, 2, 3});
  ASSERT_TRUE(s);
  EXPECT_EQ(*s, strides({1, 12, 4}));
  // Broadcast (stride 0) dims merge with nothing but can be split.
  EXPECT_EQ(*cpu::reshape_strides({4}, strides({0}), {2, 2}), strides({0, 0}));
}

TEST(ViewsTest, SlicesWithGapsNeedCopiesToMerge) {
  // Rows 0 and 2 of a [4, 5] tensor: strides (10, 1).
  EXPECT_FALSE(cpu::reshape_strides({2, 5}, strides({10, 1}), {10}));
  EXPECT_TRUE(cpu::reshape_strides({2, 5}, strides({10, 1}), {2, 5, 1}));
}

TEST(ViewsTest, BroadcastStridesAlignRight) {
  EXPECT_EQ(cpu::broadcast_strides({3, 1}, strides({1, 1}), {2, 3, 4}), strides({0, 1, 0}));
  EXPECT_EQ(cpu::broadcast_strides({}, strides({}), {5}), strides({0}));
}

}  // namespace
