// View stride arithmetic, and movement ops as views (shared by every backend).
#include <gtest/gtest.h>

#include "backends/backend.h"
#include "backends/views.h"
#include "core/ir.h"

namespace core = streamfuse::core;

namespace backends = streamfuse::backends;
using streamfuse::Shape;
using streamfuse::backends::contiguous_strides;

namespace {

backends::Strides strides(std::initializer_list<std::int64_t> s) {
  backends::Strides out{};
  std::size_t i = 0;
  for (auto v : s) out[i++] = v;
  return out;
}

TEST(ViewsTest, ContiguousReshapesAreViews) {
  const auto s = backends::reshape_strides({2, 3, 4}, contiguous_strides({2, 3, 4}), {6, 4});
  ASSERT_TRUE(s);
  EXPECT_EQ(*s, strides({4, 1}));
  EXPECT_EQ(*backends::reshape_strides({6}, strides({1}), {2, 1, 3}), strides({3, 3, 1}));
}

TEST(ViewsTest, TransposedLayoutsViewOnlyAlongCompatibleChunks) {
  // [3, 2] transposed from [2, 3]: strides (1, 3).
  EXPECT_FALSE(backends::reshape_strides({3, 2}, strides({1, 3}), {6}));
  // Splitting a dimension of a transposed layout is still a view.
  const auto s = backends::reshape_strides({4, 6}, strides({1, 4}), {4, 2, 3});
  ASSERT_TRUE(s);
  EXPECT_EQ(*s, strides({1, 12, 4}));
  // Broadcast (stride 0) dims merge with nothing but can be split.
  EXPECT_EQ(*backends::reshape_strides({4}, strides({0}), {2, 2}), strides({0, 0}));
}

TEST(ViewsTest, SlicesWithGapsNeedCopiesToMerge) {
  // Rows 0 and 2 of a [4, 5] tensor: strides (10, 1).
  EXPECT_FALSE(backends::reshape_strides({2, 5}, strides({10, 1}), {10}));
  EXPECT_TRUE(backends::reshape_strides({2, 5}, strides({10, 1}), {2, 5, 1}));
}

TEST(ViewsTest, BroadcastStridesAlignRight) {
  EXPECT_EQ(backends::broadcast_strides({3, 1}, strides({1, 1}), {2, 3, 4}), strides({0, 1, 0}));
  EXPECT_EQ(backends::broadcast_strides({}, strides({}), {5}), strides({0}));
}

// view_of: the movement ops that are views of their input, and those that need memory.
TEST(ViewsTest, MovementOpsAsViews) {
  using streamfuse::core::OpDesc;
  using streamfuse::core::OpKind;
  backends::TensorHandle in;
  in.offset = 5;
  in.strides = strides({12, 4, 1});
  auto op = [](core::OpKind kind, Shape from, Shape to) {
    core::OpDesc o;
    o.kind = kind;
    o.inputs.push_back({1, std::move(from), streamfuse::kF32});
    o.outputs.push_back({2, std::move(to), streamfuse::kF32});
    return o;
  };
  core::OpDesc permute = op(core::OpKind::kPermute, {2, 3, 4}, {4, 2, 3});
  permute.attrs.perm = {2, 0, 1};
  EXPECT_EQ(backends::view_of(permute, in)->strides, strides({1, 12, 4}));
  EXPECT_EQ(backends::view_of(permute, in)->offset, 5);
  core::OpDesc slice = op(core::OpKind::kSlice, {2, 3, 4}, {2, 1, 4});
  slice.attrs.axis = 1;
  slice.scalars = {1, 2};
  const auto sliced = backends::view_of(slice, in);
  EXPECT_EQ(sliced->offset, 5 + 4);
  EXPECT_EQ(sliced->strides, strides({12, 8, 1}));
  EXPECT_EQ(backends::view_of(op(core::OpKind::kExpand, {3, 1}, {2, 3, 5}), in)->strides,
            strides({0, 12, 0}));
  EXPECT_EQ(backends::view_of(op(core::OpKind::kReshape, {2, 3, 4}, {6, 4}), in)->strides,
            strides({4, 1}));
  EXPECT_TRUE(backends::view_of(op(core::OpKind::kCopy, {2, 3, 4}, {2, 3, 4}), in));
  // Needs memory: a transposed layout reshaped flat, contiguous() of it, and cat.
  backends::TensorHandle transposed = in;
  transposed.strides = strides({1, 2});
  EXPECT_FALSE(backends::view_of(op(core::OpKind::kReshape, {2, 3}, {6}), transposed));
  EXPECT_FALSE(backends::view_of(op(core::OpKind::kCopy, {2, 3}, {2, 3}), transposed));
  EXPECT_FALSE(backends::view_of(op(core::OpKind::kCat, {2, 3}, {4, 3}), in));
}

}  // namespace
