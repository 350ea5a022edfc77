// The op table and the OpDesc value type.
#include <gtest/gtest.h>

#include <set>

#include "stream/ir.h"

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

}  // namespace
