// Attention's batched products of more rows than the few-row kernels take (a prompt, a sequence)
// run in the library's batched GEMM (kernels.h: RowProductArgs), not through oneDNN's GEMM
// driver, wherever the CPU has FMA: each result is the chain of fused multiply-adds in order,
// the same on every ISA level and thread count, whatever the tile edges and layouts; the steps
// after the product are applied; the driver never generates its kernels for them.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
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

// The documented sum: fused multiply-adds over j in order from 0.
float documented(const float* a, const float* b, std::int64_t b_step, std::int64_t k) {
  float acc = 0;
  for (std::int64_t j = 0; j < k; ++j) acc = std::fma(a[j], b[j * b_step], acc);
  return acc;
}

// q @ k^T over `heads` heads of a [t, 3 * heads * d] projection (q and k both its views), or,
// `mix`, att @ v with att [heads, t, t] and v the projection's last third.
struct Attention {
  std::int64_t heads, t, d;
  bool mix;
  std::int64_t row() const { return 3 * heads * d; }
  std::vector<float> proj = random_floats(static_cast<std::size_t>(t * row()), 11);
  std::vector<float> att = random_floats(static_cast<std::size_t>(heads * t * t), 12);
  MatmulOperand lhs() const {
    if (mix) return {att.data(), Shape{heads, t, t}, {t * t, t, 1}};
    return {proj.data(), Shape{heads, t, d}, {d, row(), 1}};
  }
  MatmulOperand rhs() const {
    if (mix) return {proj.data() + 2 * heads * d, Shape{heads, t, d}, {d, row(), 1}};
    return {proj.data() + heads * d, Shape{heads, d, t}, {d, 1, row()}};
  }
  Shape out_shape() const { return Shape{heads, t, mix ? d : t}; }
  float expected(std::int64_t h, std::int64_t i, std::int64_t c) const {
    if (mix)
      return documented(att.data() + (h * t + i) * t, proj.data() + 2 * heads * d + h * d + c,
                        row(), t);
    return documented(proj.data() + i * row() + h * d, proj.data() + heads * d + c * row() + h * d,
                      1, d);
  }
};

void expect_documented(MatmulEngine& engine, const Attention& p, int threads) {
  const Shape shape = p.out_shape();
  std::vector<float> out(static_cast<std::size_t>(shape.numel()), -7.0f);
  EXPECT_FALSE(engine.run(kF32, p.lhs(), p.rhs(), out.data(), shape, threads));
  for (std::int64_t h = 0; h < shape[0]; ++h)
    for (std::int64_t i = 0; i < shape[1]; ++i)
      for (std::int64_t c = 0; c < shape[2]; ++c)
        ASSERT_EQ(out[static_cast<std::size_t>((h * shape[1] + i) * shape[2] + c)],
                  p.expected(h, i, c))
            << "head " << h << ", row " << i << ", column " << c << " of " << shape.to_string()
            << (p.mix ? " (att @ v)" : " (q @ k^T)") << ", " << threads << " threads";
}

TEST(MatmulBatchedGemm, AttentionIsTheDocumentedSumWithoutTheGemmDriver) {
  if (isa_level() < 3) GTEST_SKIP() << "no FMA: these products stay with oneDNN";
  MatmulEngine engine;
  // Rows and columns on both sides of the register tile's edges (6 rows, 64 or 16 columns), and
  // tasks of 48 rows split between threads.
  for (std::int64_t t : {5, 6, 7, 13, 64, 65, 100})
    for (std::int64_t d : {1, 16, 63, 64, 70})
      for (int threads : {1, 2}) {
        expect_documented(engine, Attention{3, t, d, false}, threads);
        expect_documented(engine, Attention{3, t, d, true}, threads);
      }
  expect_documented(engine, Attention{2, 300, 64, false}, 2);
  expect_documented(engine, Attention{2, 300, 64, true}, 2);
  EXPECT_EQ(engine.cached_primitives(), 0u);
  // ctest runs each test in a process of its own: nothing here ran a product through the driver.
  EXPECT_FALSE(MatmulEngine::gemm_driver_ready());
}

TEST(MatmulBatchedGemm, AMatrixOfABroadcastOverTheBatch) {
  if (isa_level() < 3) GTEST_SKIP() << "no FMA: these products stay with oneDNN";
  // One [9, 17] a for four b of their own: a's batch stride is 0.
  const std::vector<float> a = random_floats(9 * 17, 13), b = random_floats(4 * 17 * 5, 14);
  std::vector<float> out(4 * 9 * 5);
  MatmulEngine engine;
  engine.run(kF32, {a.data(), Shape{4, 9, 17}, {0, 17, 1}}, {b.data(), Shape{4, 17, 5}, {85, 5, 1}},
             out.data(), Shape{4, 9, 5}, 2);
  for (std::int64_t i = 0; i < 4; ++i)
    for (std::int64_t r = 0; r < 9; ++r)
      for (std::int64_t c = 0; c < 5; ++c)
        ASSERT_EQ(out[static_cast<std::size_t>((i * 9 + r) * 5 + c)],
                  documented(a.data() + r * 17, b.data() + i * 85 + c, 5, 17))
            << i << " " << r << " " << c;
  EXPECT_EQ(engine.cached_primitives(), 0u);
}

TEST(MatmulBatchedGemm, StepsAreAppliedToEveryResult) {
  if (isa_level() < 3) GTEST_SKIP() << "no FMA: these products stay with oneDNN";
  MatmulEngine engine;
  const Attention s{3, 70, 64, false};
  const Shape shape = s.out_shape();
  // One value for every result (applied in registers), then a mask [70, 70] broadcast over heads
  // and a per-head bias (applied to each run of results).
  const std::vector<float> scale{0.125f};
  const std::vector<float> mask = random_floats(70 * 70, 5), bias = random_floats(3, 6);
  for (bool only_scale : {true, false}) {
    std::array<ProductPostOp, 3> steps;
    steps[0] = {core::OpKind::kMul, scale.data(), {0, 0, 0}};
    steps[1] = {core::OpKind::kAdd, mask.data(), {0, 70, 1}};
    steps[2] = {core::OpKind::kSub, bias.data(), {1, 0, 0}};
    std::vector<float> out(static_cast<std::size_t>(shape.numel()));
    bool applied = false;
    engine.run(s.lhs(), s.rhs(), out.data(), shape, 0,
               std::span<const ProductPostOp>(steps.data(), only_scale ? 1 : 3), &applied);
    EXPECT_TRUE(applied);
    for (std::int64_t h = 0; h < 3; ++h)
      for (std::int64_t i = 0; i < 70; ++i)
        for (std::int64_t j = 0; j < 70; ++j) {
          float want = s.expected(h, i, j) * 0.125f;
          if (!only_scale) {
            want = want + mask[static_cast<std::size_t>(i * 70 + j)];
            want = want - bias[static_cast<std::size_t>(h)];
          }
          ASSERT_EQ(out[static_cast<std::size_t>((h * 70 + i) * 70 + j)], want)
              << h << " " << i << " " << j << (only_scale ? ", scale only" : "");
        }
  }
  EXPECT_EQ(engine.cached_primitives(), 0u);
}

// A weight shared by the batch is the one-b GEMM's (matmul_one_b_test.cpp); a's rows strided
// along k (a transposed view) stay with oneDNN.
TEST(MatmulBatchedGemm, StridedRowsStayWithOnednn) {
  MatmulEngine engine;
  const std::vector<float> x = random_floats(3 * 8 * 64, 8), w = random_floats(64 * 64, 9);
  std::vector<float> out(3 * 8 * 64);
  const MatmulOperand xt{x.data(), Shape{3, 8, 64}, {8 * 64, 1, 8}};
  const MatmulOperand per_matrix{w.data(), Shape{3, 64, 8}, {64 * 8, 8, 1}};
  engine.run(kF32, xt, per_matrix, out.data(), Shape{3, 8, 8}, 0);
  EXPECT_EQ(engine.cached_primitives(), 1u);
}

// Of 77 rows a matrix, the first m: tasks of 48 rows and the rest, in tiles of every height from
// 1 to 6 (29 rows: 5, 6, 6, 6, 6; 13: 4, 4, 5), each summing only its own rows.
TEST(MatmulBatchedGemm, EveryIsaLevelGivesTheSameBits) {
  const Attention p{3, 77, 64, false};
  const std::vector<std::int64_t> a_offsets{0, 64, 128}, b_offsets{3 * 64, 4 * 64, 5 * 64};
  for (const std::int64_t m : {77, 13, 6, 5, 3, 2, 1}) {
    std::vector<float> expected;
    int levels = 0;
    for (int level : {2, 3, 4}) {
      const KernelTable* table = kernel_table_for(level);
      if (!table) continue;
      for (int threads : {1, 2}) {
        std::vector<float> out(static_cast<std::size_t>(3 * m * 77));
        RowProductArgs args;
        args.a = p.proj.data();
        args.a_offsets = a_offsets.data();
        args.a_row_stride = p.row();
        args.b = p.proj.data();
        args.b_offsets = b_offsets.data();
        args.b_row_stride = 1;
        args.b_col_stride = p.row();
        args.m = m;
        args.k = 64;
        args.n = 77;
        args.batches = 3;
        args.out = out.data();
        args.num_threads = threads;
        table->batched_gemm(args);
        if (expected.empty()) {
          expected = out;
          for (std::int64_t h = 0; h < 3; ++h)
            for (std::int64_t i = 0; i < m; ++i)
              for (std::int64_t c = 0; c < 77; ++c)
                ASSERT_EQ(out[static_cast<std::size_t>((h * m + i) * 77 + c)], p.expected(h, i, c))
                    << table->isa << ", " << m << " rows";
        }
        EXPECT_EQ(out, expected) << table->isa << ", " << threads << " threads, " << m << " rows";
      }
      ++levels;
    }
    EXPECT_GE(levels, 1);  // the CPU's own level at least
  }
}

}  // namespace
}  // namespace streamfuse::backends::cpu
