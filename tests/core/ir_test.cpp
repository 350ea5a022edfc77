// The op table, the OpDesc value type and how ops print.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "core/ir.h"
#include "core/relative.h"

namespace core = streamfuse::core;

namespace {

TEST(IrTest, EveryKindHasAUniqueNameAndACategory) {
  std::set<std::string_view> names;
  for (int k = 0; k <= static_cast<int>(core::OpKind::kCopy); ++k) {
    const core::OpInfo& info = core::op_info(static_cast<core::OpKind>(k));
    EXPECT_FALSE(info.name.empty());
    EXPECT_TRUE(names.insert(info.name).second) << info.name;
  }
  EXPECT_EQ(core::op_name(core::OpKind::kAdd), "add");
  EXPECT_TRUE(core::is_elementwise(core::OpKind::kWhere));
  EXPECT_FALSE(core::is_elementwise(core::OpKind::kSum));
}

TEST(IrTest, EqualityAndHashCoverEveryField) {
  core::OpDesc a;
  a.kind = core::OpKind::kMul;
  a.inputs.push_back({1, {2, 3}, streamfuse::kF32, core::TensorStatus::kReadOnly});
  a.outputs.push_back({2, {2, 3}, streamfuse::kF32, core::TensorStatus::kNotInit});
  a.scalars.push_back(2.0);
  a.attrs.scalar_side = core::ScalarSide::kRhs;
  core::OpDesc b = a;
  EXPECT_EQ(a, b);
  EXPECT_EQ(core::hash_op(a), core::hash_op(b));
  auto differs = [&](auto&& change) {
    core::OpDesc c = a;
    change(c);
    EXPECT_NE(a, c);
    EXPECT_NE(core::hash_op(a), core::hash_op(c));
  };
  differs([](core::OpDesc& c) { c.kind = core::OpKind::kAdd; });
  differs([](core::OpDesc& c) { c.inputs[0].id = 9; });
  differs([](core::OpDesc& c) { c.inputs[0].shape = {3, 2}; });
  differs([](core::OpDesc& c) { c.inputs[0].dtype = streamfuse::kF16; });
  differs([](core::OpDesc& c) { c.inputs[0].status = core::TensorStatus::kReadWrite; });
  differs([](core::OpDesc& c) { c.scalars[0] = 3.0; });
  differs([](core::OpDesc& c) { c.scalars[0] = 2; });  // same value, other kind
  differs([](core::OpDesc& c) { c.attrs.scalar_side = core::ScalarSide::kLhs; });
  differs([](core::OpDesc& c) { c.attrs.perm[3] = 1; });
  differs([](core::OpDesc& c) { c.attrs.perm[7] = -1; });
  differs([](core::OpDesc& c) { c.attrs.dtype = streamfuse::kI32; });
  differs([](core::OpDesc& c) { c.attrs.axis = 1; });
  differs([](core::OpDesc& c) { c.attrs.keepdim = true; });
  EXPECT_EQ(core::to_string(a), "mul(t1:[2, 3]:f32:ro, 2)[scalar rhs] -> t2:[2, 3]:f32");

  // A window op's every window field (operator== compares them by hand, as words).
  a.kind = core::OpKind::kAvgPool2d;
  a.scalars.clear();
  a.attrs.scalar_side = core::ScalarSide::kNone;
  b = a;
  EXPECT_EQ(a, b);
  differs([](core::OpDesc& c) { c.attrs.window.kernel[0] = 3; });
  differs([](core::OpDesc& c) { c.attrs.window.kernel[1] = 3; });
  differs([](core::OpDesc& c) { c.attrs.window.stride[1] = 2; });
  differs([](core::OpDesc& c) { c.attrs.window.padding[0] = 1; });
  differs([](core::OpDesc& c) { c.attrs.window.dilation[1] = 2; });
  differs([](core::OpDesc& c) { c.attrs.window.groups = 2; });
  differs([](core::OpDesc& c) { c.attrs.window.ceil_mode = true; });
  differs([](core::OpDesc& c) { c.attrs.window.count_include_pad = false; });
}

// stable_hash_op names cached plans' files (fusion/plan_codec.h), and bundles keep those
// names: its value for a given op must never change. hash_op, for tables in memory, may.
TEST(IrTest, TheStableHashKeepsItsValue) {
  core::OpDesc op;
  op.kind = core::OpKind::kMul;
  op.inputs.push_back({0, {1, 2}, streamfuse::kF32, core::TensorStatus::kReadOnly});
  op.outputs.push_back({1, {1, 2}, streamfuse::kF32, core::TensorStatus::kNotInit});
  op.scalars.push_back(streamfuse::Scalar::from_bits(streamfuse::Scalar::Kind::kFloat, 0));
  op.attrs.scalar_side = core::ScalarSide::kRhs;
  EXPECT_EQ(core::stable_hash_op(op), 8419170909037757974ull);  // as every version so far
  core::OpDesc other = op;
  other.inputs[0].shape = {1, 3};
  EXPECT_NE(core::hash_op(op), core::hash_op(other));
  EXPECT_NE(core::stable_hash_op(op), core::stable_hash_op(other));
}

// Plans are relative: their numbers are ids and placeholders, and print as such (a placeholder's
// bits read as a double are a denormal: 9.88131e-324 for $2).
TEST(IrTest, TheRelativeFormPrintsPlaceholdersNotValues) {
  core::OpDesc add;
  add.kind = core::OpKind::kAdd;
  add.inputs.push_back({7, {1, 3}, streamfuse::kF32, core::TensorStatus::kReadOnly});
  add.scalars.push_back(1.5f);
  add.attrs.scalar_side = core::ScalarSide::kRhs;
  add.outputs.push_back({8, {1, 3}, streamfuse::kF32, core::TensorStatus::kNotInit});
  core::OpDesc mul = add;
  mul.kind = core::OpKind::kMul;
  mul.inputs[0] = {8, {1, 3}, streamfuse::kF32, core::TensorStatus::kReadWrite};
  mul.scalars[0] = 2;
  mul.outputs[0] = {9, {4, 3}, streamfuse::kI64, core::TensorStatus::kNotInit};
  core::OpDesc fill;
  fill.kind = core::OpKind::kFull;
  fill.scalars.push_back(0.25);
  fill.outputs.push_back({10, {3}, streamfuse::kF32, core::TensorStatus::kNotInit});

  core::RelativeConverter converter;
  std::vector<core::OpDesc> relative(3);
  converter.convert(add, relative[0]);
  converter.convert(mul, relative[1]);
  converter.convert(fill, relative[2]);
  const core::OpForm r = core::OpForm::kRelative;
  EXPECT_EQ(core::to_string(relative[0], r),
            "add(t0:[1, s1]:f32:ro, $0)[scalar rhs] -> t1:[1, s1]:f32");
  EXPECT_EQ(core::to_string(relative[1], r),
            "mul(t1:[1, s1]:f32:rw, $1)[scalar rhs] -> t2:[s2, s1]:i64");
  EXPECT_EQ(core::to_string(relative[2], r), "full($2) -> t3:[s1]:f32");
  // The global form is unchanged.
  EXPECT_EQ(core::to_string(fill), "full(0.25) -> t10:[3]:f32");
}

}  // namespace
