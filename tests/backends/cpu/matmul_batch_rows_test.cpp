// A batched product whose right operand is one matrix for the whole batch runs as one product of
// batch x rows rows (backends/cpu/matmul_batch_rows.h): which layouts and post-ops fold, that a
// folded product gives the bits of the same rows as one 2-D product, and that shapes with the
// same count of rows share one oneDNN primitive.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "backends/cpu/matmul.h"
#include "backends/cpu/matmul_batch_rows.h"
#include "backends/matmul_layout.h"
#include "tests/backends/cpu/random_floats.h"

namespace streamfuse::backends::cpu {
namespace {

using testing::random_floats;

MatmulOperand operand(const Shape& shape, std::array<std::int64_t, kMaxRank> strides) {
  return {nullptr, shape, strides};
}

MatmulLayout layout(const MatmulOperand& a, const MatmulOperand& b, const Shape& out) {
  return make_matmul_layout(a, b, out);
}

TEST(MatmulBatchRows, ALinearLayerOverBatchAndSequenceIsOneProduct) {
  // x [4, 6, 8] (contiguous) @ w [8, 5]
  const MatmulLayout l =
      layout(operand({4, 6, 8}, {48, 8, 1}), operand({8, 5}, {5, 1}), Shape{4, 6, 5});
  const std::optional<MatmulLayout> f = batch_as_rows(l);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->batch_rank, 0);
  EXPECT_EQ(f->m, 24);
  EXPECT_EQ(f->k, 8);
  EXPECT_EQ(f->n, 5);
  EXPECT_EQ(f->a.row_stride, 8);
  EXPECT_EQ(f->a.col_stride, 1);
  EXPECT_EQ(f->b.row_stride, 5);
  // Rows of a strided slice ([4, 6, 8] of a [4, 6, 16] buffer): still one stride apart.
  const MatmulLayout sliced =
      layout(operand({4, 6, 8}, {96, 16, 1}), operand({8, 5}, {5, 1}), Shape{4, 6, 5});
  ASSERT_TRUE(batch_as_rows(sliced));
  EXPECT_EQ(batch_as_rows(sliced)->a.row_stride, 16);
  // Two batch dimensions, and one row per matrix (a decode step over a batch: [3, 2, 1, 8]).
  const MatmulLayout two =
      layout(operand({3, 2, 1, 8}, {16, 8, 8, 1}), operand({8, 5}, {5, 1}), Shape{3, 2, 1, 5});
  ASSERT_TRUE(batch_as_rows(two));
  EXPECT_EQ(batch_as_rows(two)->m, 6);
  EXPECT_EQ(batch_as_rows(two)->a.row_stride, 8);
}

TEST(MatmulBatchRows, WhatDoesNotFold) {
  const MatmulOperand w = operand({8, 5}, {5, 1});
  // No batch dimension: nothing to fold.
  EXPECT_FALSE(batch_as_rows(layout(operand({6, 8}, {8, 1}), w, Shape{6, 5})));
  // A gap between matrices, a transposed batch, a batch broadcast (stride 0).
  EXPECT_FALSE(batch_as_rows(layout(operand({4, 6, 8}, {64, 8, 1}), w, Shape{4, 6, 5})));
  EXPECT_FALSE(batch_as_rows(layout(operand({4, 6, 8}, {8, 32, 1}), w, Shape{4, 6, 5})));
  EXPECT_FALSE(batch_as_rows(layout(operand({4, 6, 8}, {0, 8, 1}), w, Shape{4, 6, 5})));
  // A weight per matrix (attention's products).
  EXPECT_FALSE(batch_as_rows(
      layout(operand({4, 6, 8}, {48, 8, 1}), operand({4, 8, 5}, {40, 5, 1}), Shape{4, 6, 5})));
  // Strides whose products overflow are not one stride.
  EXPECT_FALSE(batch_as_rows(layout(
      operand({4, 6, 8}, {std::int64_t{1} << 62, std::int64_t{1} << 61, 1}), w, Shape{4, 6, 5})));
}

TEST(MatmulBatchRows, PostOpsFoldWhereTheirRowsAreOneStrideApart) {
  const MatmulLayout l =
      layout(operand({4, 6, 8}, {48, 8, 1}), operand({8, 5}, {5, 1}), Shape{4, 6, 5});
  const auto post = [](std::array<std::int64_t, kMaxRank> strides) {
    return ProductPostOp{core::OpKind::kAdd, nullptr, strides};
  };
  // A bias (one row for all rows) and a residual [4, 6, 5].
  const std::optional<ProductPostOp> bias = post_op_as_rows(l, post({0, 0, 1}));
  ASSERT_TRUE(bias);
  EXPECT_EQ(bias->strides[0], 0);
  EXPECT_EQ(bias->strides[1], 1);
  const std::optional<ProductPostOp> residual = post_op_as_rows(l, post({30, 5, 1}));
  ASSERT_TRUE(residual);
  EXPECT_EQ(residual->strides[0], 5);
  EXPECT_EQ(residual->strides[1], 1);
  // A [6, 5] operand repeated for each matrix: its rows restart with each matrix.
  EXPECT_FALSE(post_op_as_rows(l, post({0, 5, 1})));
}

// Folded, [b, t, k] @ [k, n] is the 2-D product of its b * t rows: the same bits, and one
// primitive for every (b, t) with the same count of rows. (8 columns: oneDNN's. Wider products
// run in the one-b GEMM on AVX-512, whose bits do not depend on the rows at all:
// matmul_one_b_test.cpp.)
TEST(MatmulBatchRows, ShapesWithTheSameRowsShareAPrimitiveAndGiveThe2DBits) {
  MatmulEngine engine;
  const std::int64_t k = 96, n = 8;
  const std::vector<float> x = random_floats(12 * k, 1), w = random_floats(k * n, 2);
  std::vector<float> flat(12 * n);
  engine.run(kF32, {x.data(), Shape{12, k}, {k, 1}}, {w.data(), Shape{k, n}, {n, 1}}, flat.data(),
             Shape{12, n}, 0);
  const std::size_t primitives = engine.cached_primitives();
  EXPECT_EQ(primitives, 1u);
  for (const auto& [b, t] :
       {std::pair<std::int64_t, std::int64_t>{2, 6}, {3, 4}, {12, 1}, {4, 3}}) {
    SCOPED_TRACE(std::to_string(b) + " x " + std::to_string(t));
    std::vector<float> out(12 * n, -1.0f);
    engine.run(kF32, {x.data(), Shape{b, t, k}, {t * k, k, 1}}, {w.data(), Shape{k, n}, {n, 1}},
               out.data(), Shape{b, t, n}, 0);
    EXPECT_EQ(std::memcmp(out.data(), flat.data(), out.size() * sizeof(float)), 0);
    EXPECT_EQ(engine.cached_primitives(), primitives);
  }
  // With post-ops: a bias folds with the product; a per-position operand repeated for each
  // matrix does not, and the product is then stored alone (the caller adds it), its bits still
  // the 2-D product's.
  const std::vector<float> bias = random_floats(n, 3), per_position = random_floats(4 * n, 4);
  std::vector<float> out(12 * n);
  bool applied = false;
  const ProductPostOp with_bias{core::OpKind::kAdd, bias.data(), {0, 0, 1}};
  engine.run({x.data(), Shape{3, 4, k}, {4 * k, k, 1}}, {w.data(), Shape{k, n}, {n, 1}}, out.data(),
             Shape{3, 4, n}, 0, std::span(&with_bias, 1), &applied);
  for (std::size_t i = 0; i < out.size(); ++i)
    ASSERT_EQ(out[i], applied ? flat[i] + bias[i % n] : flat[i]) << i;
  const ProductPostOp repeated{core::OpKind::kAdd, per_position.data(), {0, n, 1}};
  engine.run({x.data(), Shape{3, 4, k}, {4 * k, k, 1}}, {w.data(), Shape{k, n}, {n, 1}}, out.data(),
             Shape{3, 4, n}, 0, std::span(&repeated, 1), &applied);
  EXPECT_FALSE(applied);
  EXPECT_EQ(std::memcmp(out.data(), flat.data(), out.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace streamfuse::backends::cpu
