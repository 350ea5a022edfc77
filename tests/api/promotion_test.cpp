// Broadcasting and type promotion tables.
#include <gtest/gtest.h>

#include <streamfuse/streamfuse.h>

namespace sf = streamfuse;

namespace {

constexpr sf::DType kAll[] = {sf::kBool, sf::kU8,   sf::kI8,  sf::kI32, sf::kI64,
                              sf::kF16,  sf::kBF16, sf::kF32, sf::kF64};
constexpr int kN = 9;
using sf::kBF16, sf::kBool, sf::kF16, sf::kF32, sf::kF64, sf::kI32, sf::kI64, sf::kI8, sf::kU8;

// PyTorch's table for tensor-tensor promotion, rows and columns in kAll's order, but for u8 with
// i8: PyTorch gives i16, which streamfuse does not have; i32 holds both ranges too (dtype.h).
constexpr sf::DType kPromoted[kN][kN] = {
    /* bool */ {kBool, kU8, kI8, kI32, kI64, kF16, kBF16, kF32, kF64},
    /* u8   */ {kU8, kU8, kI32, kI32, kI64, kF16, kBF16, kF32, kF64},
    /* i8   */ {kI8, kI32, kI8, kI32, kI64, kF16, kBF16, kF32, kF64},
    /* i32  */ {kI32, kI32, kI32, kI32, kI64, kF16, kBF16, kF32, kF64},
    /* i64  */ {kI64, kI64, kI64, kI64, kI64, kF16, kBF16, kF32, kF64},
    /* f16  */ {kF16, kF16, kF16, kF16, kF16, kF16, kF32, kF32, kF64},
    /* bf16 */ {kBF16, kBF16, kBF16, kBF16, kBF16, kF32, kBF16, kF32, kF64},
    /* f32  */ {kF32, kF32, kF32, kF32, kF32, kF32, kF32, kF32, kF64},
    /* f64  */ {kF64, kF64, kF64, kF64, kF64, kF64, kF64, kF64, kF64},
};

TEST(PromotionTest, TensorTensorTableForEveryOp) {
  for (int i = 0; i < kN; ++i) {
    for (int j = 0; j < kN; ++j) {
      const sf::DType want = kPromoted[i][j];
      EXPECT_EQ(sf::promote_types(kAll[i], kAll[j]), want);
      const sf::Tensor a = sf::ones({2}, kAll[i]), b = sf::ones({2}, kAll[j]);
      if (want != sf::kBool) {
        EXPECT_EQ((a + b).dtype(), want);
        EXPECT_EQ((a * b).dtype(), want);
        EXPECT_EQ((a / b).dtype(), sf::is_floating(want) ? want : sf::kF32) << "true division";
        const sf::Tensor s = a + b;
        EXPECT_EQ(s.to(sf::kF32).to_vector<float>(), (std::vector<float>{2, 2}));
      }
      EXPECT_EQ(sf::maximum(a, b).dtype(), want);
      EXPECT_EQ((a < b).dtype(), sf::kBool);
      EXPECT_EQ(sf::where(sf::ones({2}, sf::kBool), a, b).dtype(), want);
      EXPECT_EQ(sf::cat({a, b}).dtype(), want);
    }
  }
}

TEST(PromotionTest, ScalarsLiftOnlyLowerCategories) {
  struct Row {
    sf::DType tensor;
    sf::Scalar scalar;
    sf::DType want;
  } rows[] = {
      {sf::kF16, 2.5, sf::kF16},
      {sf::kBF16, 2, sf::kBF16},
      {sf::kF32, true, sf::kF32},
      {sf::kI32, 2.5, sf::kF32},
      {sf::kI32, 2, sf::kI32},
      {sf::kI64, 2.5f, sf::kF32},
      {sf::kBool, 1, sf::kI64},
      {sf::kBool, 1.5, sf::kF32},
      {sf::kI32, std::int64_t{1} << 40, sf::kI32},
      {sf::kU8, 1, sf::kU8},
      {sf::kU8, -300, sf::kU8},
      {sf::kI8, true, sf::kI8},
      {sf::kI8, 2.5, sf::kF32},
      {sf::kU8, 2.5f, sf::kF32},
      {sf::kF64, 2.5f, sf::kF64},
      {sf::kF64, 2, sf::kF64},
      {sf::kI64, 2.5, sf::kF32},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(sf::promote_with_scalar(r.tensor, r.scalar), r.want);
    EXPECT_EQ((sf::ones({1}, r.tensor) * r.scalar).dtype(), r.want) << sf::dtype_name(r.tensor);
  }
}

TEST(PromotionTest, ArithmeticOnTwoBoolsIsRejected) {
  const sf::Tensor b = sf::ones({2}, sf::kBool);
  EXPECT_THROW(b + b, sf::DTypeError);
  EXPECT_THROW(b - true, sf::DTypeError);
  EXPECT_THROW(b * b, sf::DTypeError);
  EXPECT_THROW(b / b, sf::DTypeError);
  EXPECT_EQ((b + 1).to_vector<std::int64_t>(), (std::vector<std::int64_t>{2, 2}));
}

struct BroadcastRow {
  sf::Shape a, b;
  bool ok;
  sf::Shape want;
};

TEST(BroadcastTest, Table) {
  const BroadcastRow rows[] = {
      {{}, {}, true, {}},
      {{3}, {}, true, {3}},
      {{2, 3}, {3}, true, {2, 3}},
      {{2, 1}, {1, 3}, true, {2, 3}},
      {{4, 1, 5}, {3, 1}, true, {4, 3, 5}},
      {{1}, {0}, true, {0}},
      {{2, 0}, {2, 1}, true, {2, 0}},
      {{8, 1, 6, 1}, {7, 1, 5}, true, {8, 7, 6, 5}},
      {{3}, {4}, false, {}},
      {{2, 3}, {3, 2}, false, {}},
      {{2, 0}, {2, 3}, false, {}},
  };
  for (const BroadcastRow& r : rows) {
    const sf::Tensor a = sf::zeros(r.a), b = sf::ones(r.b);
    if (!r.ok) {
      EXPECT_THROW(a + b, sf::ShapeError) << r.a.to_string() << " with " << r.b.to_string();
      continue;
    }
    const sf::Tensor s = a + b;
    EXPECT_EQ(s.shape(), r.want) << r.a.to_string() << " with " << r.b.to_string();
    EXPECT_EQ((b + a).shape(), r.want);
    for (float v : s.to_vector<float>()) EXPECT_EQ(v, 1.0f);
  }
}

TEST(BroadcastTest, ValuesFollowTheBroadcastRows) {
  const sf::Tensor col = sf::from_vector(std::vector<float>{1, 2}, {2, 1});
  const sf::Tensor row = sf::from_vector(std::vector<float>{10, 20, 30}, {1, 3});
  EXPECT_EQ((col + row).to_vector<float>(), (std::vector<float>{11, 21, 31, 12, 22, 32}));
  EXPECT_EQ((row - col).to_vector<float>(), (std::vector<float>{9, 19, 29, 8, 18, 28}));
}

}  // namespace
