// The op table, the OpDesc value type and how ops print.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "stream/ir.h"
#include "stream/relative.h"

namespace st = streamfuse::stream;

namespace {

TEST(IrTest, EveryKindHasAUniqueNameAndACategory) {
  std::set<std::string_view> names;
  for (int k = 0; k <= static_cast<int>(st::OpKind::kCopy); ++k) {
    const st::OpInfo& info = st::op_info(static_cast<st::OpKind>(k));
    EXPECT_FALSE(info.name.empty());
    EXPECT_TRUE(names.insert(info.name).second) << info.name;
  }
  EXPECT_EQ(st::op_name(st::OpKind::kAdd), "add");
  EXPECT_TRUE(st::is_elementwise(st::OpKind::kWhere));
  EXPECT_FALSE(st::is_elementwise(st::OpKind::kSum));
}

TEST(IrTest, EqualityAndHashCoverEveryField) {
  st::OpDesc a;
  a.kind = st::OpKind::kMul;
  a.inputs.push_back({1, {2, 3}, streamfuse::kF32, st::TensorStatus::kReadOnly});
  a.outputs.push_back({2, {2, 3}, streamfuse::kF32, st::TensorStatus::kNotInit});
  a.scalars.push_back(2.0);
  a.attrs.scalar_side = st::ScalarSide::kRhs;
  st::OpDesc b = a;
  EXPECT_EQ(a, b);
  EXPECT_EQ(st::hash_op(a), st::hash_op(b));
  auto differs = [&](auto&& change) {
    st::OpDesc c = a;
    change(c);
    EXPECT_NE(a, c);
    EXPECT_NE(st::hash_op(a), st::hash_op(c));
  };
  differs([](st::OpDesc& c) { c.kind = st::OpKind::kAdd; });
  differs([](st::OpDesc& c) { c.inputs[0].id = 9; });
  differs([](st::OpDesc& c) { c.inputs[0].shape = {3, 2}; });
  differs([](st::OpDesc& c) { c.inputs[0].dtype = streamfuse::kF16; });
  differs([](st::OpDesc& c) { c.inputs[0].status = st::TensorStatus::kReadWrite; });
  differs([](st::OpDesc& c) { c.scalars[0] = 3.0; });
  differs([](st::OpDesc& c) { c.scalars[0] = 2; });  // same value, other kind
  differs([](st::OpDesc& c) { c.attrs.scalar_side = st::ScalarSide::kLhs; });
  differs([](st::OpDesc& c) { c.attrs.perm[3] = 1; });
  EXPECT_EQ(st::to_string(a), "mul(t1:[2, 3]:f32:ro, 2)[scalar rhs] -> t2:[2, 3]:f32");
}

// Plans are relative: their numbers are ids and placeholders, and print as such (a placeholder's
// bits read as a double are a denormal: 9.88131e-324 for $2).
TEST(IrTest, TheRelativeFormPrintsPlaceholdersNotValues) {
  st::OpDesc add;
  add.kind = st::OpKind::kAdd;
  add.inputs.push_back({7, {1, 3}, streamfuse::kF32, st::TensorStatus::kReadOnly});
  add.scalars.push_back(1.5f);
  add.attrs.scalar_side = st::ScalarSide::kRhs;
  add.outputs.push_back({8, {1, 3}, streamfuse::kF32, st::TensorStatus::kNotInit});
  st::OpDesc mul = add;
  mul.kind = st::OpKind::kMul;
  mul.inputs[0] = {8, {1, 3}, streamfuse::kF32, st::TensorStatus::kReadWrite};
  mul.scalars[0] = 2;
  mul.outputs[0] = {9, {4, 3}, streamfuse::kI64, st::TensorStatus::kNotInit};
  st::OpDesc fill;
  fill.kind = st::OpKind::kFull;
  fill.scalars.push_back(0.25);
  fill.outputs.push_back({10, {3}, streamfuse::kF32, st::TensorStatus::kNotInit});

  st::RelativeConverter converter;
  std::vector<st::OpDesc> relative(3);
  converter.convert(add, relative[0]);
  converter.convert(mul, relative[1]);
  converter.convert(fill, relative[2]);
  const st::OpForm r = st::OpForm::kRelative;
  EXPECT_EQ(st::to_string(relative[0], r),
            "add(t0:[1, s1]:f32:ro, $0)[scalar rhs] -> t1:[1, s1]:f32");
  EXPECT_EQ(st::to_string(relative[1], r),
            "mul(t1:[1, s1]:f32:rw, $1)[scalar rhs] -> t2:[s2, s1]:i64");
  EXPECT_EQ(st::to_string(relative[2], r), "full($2) -> t3:[s1]:f32");
  // The global form is unchanged.
  EXPECT_EQ(st::to_string(fill), "full(0.25) -> t10:[3]:f32");
}

}  // namespace
