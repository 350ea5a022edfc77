// Attention's batched products of a few rows (decoding, a short prompt) run in the library's own
// kernels (kernels.h: DotRowsArgs with several vectors, combine_rows), not through oneDNN's
// GEMM driver: each result is the documented sum in order, the same on every ISA level and
// thread count, a row's results do not depend on how many rows the product has (a prompt's
// position gives what that position alone gives), the steps after the product are applied as
// results are stored, and the driver never generates its kernels for them.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "backends/cpu/isa.h"
#include "backends/cpu/kernels/kernels.h"
#include "backends/cpu/matmul.h"
#include "tests/backends/cpu/random_floats.h"

namespace streamfuse::backends::cpu {
namespace {

using testing::random_floats;

constexpr std::int64_t H = 3, D = 64, kRow = 3 * H * D;  // a [T, 3 * H * D] projection

// The DotRowsArgs sum, written plainly: element j into lane j % 64 (a product, then a sum), then
// the lanes halved as a tree.
float documented_dot(const float* row, std::int64_t row_step, const float* vec,
                     std::int64_t vec_step, std::int64_t k) {
  float lanes[64] = {};
  for (std::int64_t j = 0; j < k; ++j) {
    const float product = row[j * row_step] * vec[j * vec_step];
    lanes[j % 64] = lanes[j % 64] + product;
  }
  for (int half = 32; half >= 1; half /= 2)
    for (int l = 0; l < half; ++l) lanes[l] = lanes[l] + lanes[l + half];
  return lanes[0];
}

// combine_rows' sum: in order of j, a product then a sum.
float documented_combination(const float* w, std::int64_t w_step, const float* column,
                             std::int64_t column_step, std::int64_t k) {
  float acc = 0;
  for (std::int64_t j = 0; j < k; ++j) {
    const float product = w[j * w_step] * column[j * column_step];
    acc = acc + product;
  }
  return acc;
}

// q @ k^T for `rows` query positions over `t` cached positions: q rows of a [rows, 3HD]
// projection, k the second third of a [t, 3HD] one, both viewed per head.
struct Scores {
  std::int64_t rows, t;
  std::vector<float> q = random_floats(static_cast<std::size_t>(rows * kRow), 1);
  std::vector<float> kv = random_floats(static_cast<std::size_t>(t * kRow), 2);
  MatmulOperand lhs() const { return {q.data(), Shape{H, rows, D}, {D, kRow, 1}}; }
  MatmulOperand rhs() const { return {kv.data() + H * D, Shape{H, D, t}, {D, 1, kRow}}; }
  Shape out_shape() const { return Shape{H, rows, t}; }
  float expected(std::int64_t h, std::int64_t i, std::int64_t j) const {
    return documented_dot(kv.data() + H * D + j * kRow + h * D, 1, q.data() + i * kRow + h * D, 1,
                          D);
  }
};

// att @ v: [H, rows, t] weights over v, the last third of the [t, 3HD] projection per head.
struct Mix {
  std::int64_t rows, t;
  std::vector<float> att = random_floats(static_cast<std::size_t>(H * rows * t), 3);
  std::vector<float> kv = random_floats(static_cast<std::size_t>(t * kRow), 4);
  MatmulOperand lhs() const { return {att.data(), Shape{H, rows, t}, {rows * t, t, 1}}; }
  MatmulOperand rhs() const { return {kv.data() + 2 * H * D, Shape{H, t, D}, {D, kRow, 1}}; }
  Shape out_shape() const { return Shape{H, rows, D}; }
  float expected(std::int64_t h, std::int64_t i, std::int64_t d) const {
    return documented_combination(att.data() + (h * rows + i) * t, 1,
                                  kv.data() + 2 * H * D + h * D + d, kRow, t);
  }
};

template <class Product>
void expect_documented(MatmulEngine& engine, const Product& p, int threads) {
  const Shape shape = p.out_shape();
  std::vector<float> out(static_cast<std::size_t>(shape.numel()), -7.0f);
  EXPECT_FALSE(engine.run(kF32, p.lhs(), p.rhs(), out.data(), shape, threads));
  for (std::int64_t h = 0; h < shape[0]; ++h)
    for (std::int64_t i = 0; i < shape[1]; ++i)
      for (std::int64_t j = 0; j < shape[2]; ++j)
        ASSERT_EQ(out[static_cast<std::size_t>((h * shape[1] + i) * shape[2] + j)],
                  p.expected(h, i, j))
            << "head " << h << ", row " << i << ", column " << j << " of " << shape.to_string()
            << ", " << threads << " threads";
}

TEST(MatmulFewRows, AttentionOfAFewPositionsIsTheDocumentedSumWithoutTheGemmDriver) {
  MatmulEngine engine;
  for (std::int64_t rows : {1, 2, 3, 4})
    for (std::int64_t t : {1, 5, 64, 300})
      for (int threads : {1, 2}) {
        expect_documented(engine, Scores{rows, t}, threads);
        expect_documented(engine, Mix{rows, t}, threads);
      }
  EXPECT_EQ(engine.cached_primitives(), 0u);
  // ctest runs each test in a process of its own: nothing here ran a product through the driver.
  EXPECT_FALSE(MatmulEngine::gemm_driver_ready());
}

TEST(MatmulFewRows, APositionGivesTheSameBitsInAPromptAsAlone) {
  MatmulEngine engine;
  const Mix prompt{4, 37};
  std::vector<float> all(static_cast<std::size_t>(H * 4 * D));
  engine.run(kF32, prompt.lhs(), prompt.rhs(), all.data(), prompt.out_shape(), 0);
  for (std::int64_t i = 0; i < 4; ++i) {
    // Row i of every head alone: a [H, 1, t] view of the same weights.
    const MatmulOperand row{prompt.att.data() + i * 37, Shape{H, 1, 37}, {4 * 37, 37, 1}};
    std::vector<float> one(static_cast<std::size_t>(H * D));
    engine.run(kF32, row, prompt.rhs(), one.data(), Shape{H, 1, D}, 0);
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t d = 0; d < D; ++d)
        ASSERT_EQ(one[static_cast<std::size_t>(h * D + d)],
                  all[static_cast<std::size_t>((h * 4 + i) * D + d)])
            << "row " << i << ", head " << h << ", column " << d;
  }
}

TEST(MatmulFewRows, StepsAreAppliedAsResultsAreStored) {
  MatmulEngine engine;
  const Scores s{2, 40};
  const Shape shape = s.out_shape();
  // scores * 0.125 + mask, the mask [1, 2, 40] broadcast over heads, then a per-head bias.
  const std::vector<float> scale{0.125f};
  const std::vector<float> mask = random_floats(2 * 40, 5), bias = random_floats(H, 6);
  std::array<ProductPostOp, 3> steps;
  steps[0] = {core::OpKind::kMul, scale.data(), {0, 0, 0}};
  steps[1] = {core::OpKind::kAdd, mask.data(), {0, 40, 1}};
  steps[2] = {core::OpKind::kSub, bias.data(), {1, 0, 0}};
  std::vector<float> out(static_cast<std::size_t>(shape.numel()));
  bool applied = false;
  engine.run(s.lhs(), s.rhs(), out.data(), shape, 0, steps, &applied);
  EXPECT_TRUE(applied);
  for (std::int64_t h = 0; h < H; ++h)
    for (std::int64_t i = 0; i < 2; ++i)
      for (std::int64_t j = 0; j < 40; ++j) {
        float want = s.expected(h, i, j) * 0.125f;
        want = want + mask[static_cast<std::size_t>(i * 40 + j)];
        want = want - bias[static_cast<std::size_t>(h)];
        ASSERT_EQ(out[static_cast<std::size_t>((h * 2 + i) * 40 + j)], want) << h << i << j;
      }

  const Mix m{3, 20};
  std::vector<float> mixed(static_cast<std::size_t>(m.out_shape().numel()));
  const std::vector<float> residual = random_floats(mixed.size(), 7);
  const std::array<ProductPostOp, 1> add{{{core::OpKind::kAdd, residual.data(), {3 * D, D, 1}}}};
  engine.run(m.lhs(), m.rhs(), mixed.data(), m.out_shape(), 0, add, &applied);
  EXPECT_TRUE(applied);
  for (std::size_t i = 0; i < mixed.size(); ++i) {
    const auto e = static_cast<std::int64_t>(i);
    ASSERT_EQ(mixed[i], m.expected(e / (3 * D), e / D % 3, e % D) + residual[i]) << i;
  }
  EXPECT_EQ(engine.cached_primitives(), 0u);
}

// More rows than a short prompt's: the batched GEMM where the CPU has FMA
// (matmul_batched_gemm_test), else oneDNN; a matrix the batch shares (a weight): oneDNN.
TEST(MatmulFewRows, LongerPromptsAndSharedWeightsDoNotTakeTheFewRowKernels) {
  MatmulEngine engine;
  std::vector<float> out(static_cast<std::size_t>(H * 5 * D));
  const Mix five{5, 16};
  engine.run(kF32, five.lhs(), five.rhs(), out.data(), five.out_shape(), 0);
  const std::size_t longer = isa_level() >= 3 ? 0u : 1u;
  EXPECT_EQ(engine.cached_primitives(), longer);
  // A weight shared by the batch: one product of H x 2 rows (the one-b GEMM on AVX-512; oneDNN,
  // which makes a primitive, elsewhere), not a few-row kernel per matrix.
  const std::vector<float> x = random_floats(H * 2 * D, 8), w = random_floats(D * D, 9);
  const MatmulOperand xs{x.data(), Shape{H, 2, D}, {2 * D, D, 1}};
  const MatmulOperand shared{w.data(), Shape{D, D}, {D, 1}};
  std::vector<float> batched(static_cast<std::size_t>(H * 2 * D)), flat(batched.size());
  engine.run(kF32, xs, shared, batched.data(), Shape{H, 2, D}, 0);
  EXPECT_EQ(engine.cached_primitives(), longer + (isa_level() >= 4 ? 0u : 1u));
  engine.run(kF32, {x.data(), Shape{H * 2, D}, {D, 1}}, shared, flat.data(), Shape{H * 2, D}, 0);
  EXPECT_EQ(batched, flat);
}

TEST(MatmulFewRows, EveryIsaLevelGivesTheSameBits) {
  const Mix m{2, 300};
  const std::vector<std::int64_t> w_offsets{0, 2 * 300, 4 * 300}, b_offsets{0, D, 2 * D};
  std::vector<float> expected;
  int levels = 0;
  for (int level : {2, 3, 4}) {
    const KernelTable* table = kernel_table_for(level);
    if (!table) continue;
    for (int threads : {1, 2}) {
      std::vector<float> out(static_cast<std::size_t>(H * 2 * D));
      RowProductArgs args;
      args.a = m.att.data();
      args.a_offsets = w_offsets.data();
      args.a_row_stride = 300;
      args.a_col_stride = 1;
      args.b = m.kv.data() + 2 * H * D;
      args.b_offsets = b_offsets.data();
      args.b_row_stride = kRow;
      args.m = 2;
      args.k = 300;
      args.n = D;
      args.batches = H;
      args.out = out.data();
      args.num_threads = threads;
      table->combine_rows(args);
      if (expected.empty()) expected = out;
      EXPECT_EQ(out, expected) << table->isa << ", " << threads << " threads";
    }
    ++levels;
  }
  EXPECT_GE(levels, 1);  // the CPU's own level at least
}

}  // namespace
}  // namespace streamfuse::backends::cpu
