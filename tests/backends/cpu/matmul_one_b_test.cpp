// Products whose b is one matrix for every row (linear layers: x @ W over [batch..., rows,
// features], W stored [in, out] or [out, in]) of more than four rows run in the library's one-b
// GEMM (kernels.h: gemm_one_b) on AVX-512 (on AVX2 at 128 to 384 rows), with no oneDNN primitive:
// each result is the chain of fused multiply-adds over j in order, the same on every ISA level
// (whose tiles differ; the kernel tables of the levels below are tested directly) and thread count,
// whether the batch folds into rows or not; steps after the product are applied; W^T views are
// transposed as they are packed; narrow products, four rows or fewer and a's rows strided stay with
// oneDNN, as every other one does below AVX-512, where oneDNN's GEMM driver is the faster
// (matmul.cpp, own_kernel).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/isa.h"
#include "backends/cpu/kernels/kernels.h"
#include "backends/cpu/matmul.h"
#include "tests/backends/cpu/random_floats.h"

namespace streamfuse::backends::cpu {
namespace {

using testing::random_floats;

// x [rows, k] (rows lda apart) @ w [k, n] (rows ldb apart), every result the documented sum:
// fused multiply-adds over j in order from +0.
std::vector<float> documented(const std::vector<float>& x, std::int64_t lda,
                              const std::vector<float>& w, std::int64_t ldb, std::int64_t rows,
                              std::int64_t k, std::int64_t n) {
  std::vector<float> out(static_cast<std::size_t>(rows * n));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < n; ++c) {
      float acc = 0;
      for (std::int64_t j = 0; j < k; ++j)
        acc = std::fma(x[static_cast<std::size_t>(r * lda + j)],
                       w[static_cast<std::size_t>(j * ldb + c)], acc);
      out[static_cast<std::size_t>(r * n + c)] = acc;
    }
  return out;
}

// The first index where two results differ, for a readable failure.
std::string first_difference(const std::vector<float>& got, const std::vector<float>& want,
                             std::int64_t n) {
  for (std::size_t i = 0; i < want.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0)
      return "row " + std::to_string(static_cast<std::int64_t>(i) / n) + ", column " +
             std::to_string(static_cast<std::int64_t>(i) % n) + ": " + std::to_string(got[i]) +
             " instead of " + std::to_string(want[i]);
  return "";
}

TEST(MatmulOneB, LinearLayersAreTheDocumentedSumWithoutAPrimitive) {
  if (isa_level() < 4) GTEST_SKIP() << "below AVX-512 these products stay with oneDNN";
  MatmulEngine engine;
  // Rows and columns on both sides of the tiles' edges (8 or 6 rows, 48, 16 or 8 columns a
  // vector, 48-row tasks), a's and b's rows further apart than k and n, one and two threads.
  for (std::int64_t rows : {5, 7, 8, 9, 13, 48, 50, 97})
    for (std::int64_t n : {16, 17, 47, 48, 49, 100})
      for (std::int64_t k : {1, 3, 64, 129}) {
        const std::int64_t lda = k + 3, ldb = n + 5;
        const std::vector<float> x = random_floats(static_cast<std::size_t>(rows * lda), 1);
        const std::vector<float> w = random_floats(static_cast<std::size_t>(k * ldb), 2);
        const std::vector<float> want = documented(x, lda, w, ldb, rows, k, n);
        for (int threads : {1, 2}) {
          std::vector<float> out(want.size(), -7.0f);
          EXPECT_FALSE(engine.run(kF32, {x.data(), Shape{rows, k}, {lda, 1}},
                                  {w.data(), Shape{k, n}, {ldb, 1}}, out.data(), Shape{rows, n},
                                  threads));
          ASSERT_EQ(first_difference(out, want, n), "")
              << rows << " x " << k << " @ " << k << " x " << n << ", " << threads << " threads";
        }
      }
  EXPECT_EQ(engine.cached_primitives(), 0u);
}

// Below AVX-512 (AVX2 with FMA) the one-b GEMM takes 128 to 384 rows of a linear layer in all,
// folded batch included, W [in, out] and W^T alike, with no primitive; fewer or more rows go to
// oneDNN's driver, which is the faster there (matmul.cpp, own_kernel).
TEST(MatmulOneB, OnAvx2From128To384RowsInAllWithoutAPrimitive) {
  if (isa_level() != 3) GTEST_SKIP() << "for a CPU with AVX2 and FMA but no AVX-512";
  MatmulEngine engine;
  const std::int64_t k = 37, n = 50;
  const std::vector<float> x = random_floats(600 * k, 15), w = random_floats(k * n, 16);
  std::vector<float> w_t(static_cast<std::size_t>(n * k));  // the same weight, [out, in]
  for (std::int64_t j = 0; j < k; ++j)
    for (std::int64_t c = 0; c < n; ++c)
      w_t[static_cast<std::size_t>(c * k + j)] = w[static_cast<std::size_t>(j * n + c)];
  for (std::int64_t rows : {128, 301, 384}) {
    const std::vector<float> want = documented(x, k, w, n, rows, k, n);
    for (bool transposed : {false, true}) {
      std::vector<float> out(want.size(), -7.0f);
      const MatmulOperand weight = transposed ? MatmulOperand{w_t.data(), Shape{k, n}, {1, k}}
                                              : MatmulOperand{w.data(), Shape{k, n}, {n, 1}};
      engine.run(kF32, {x.data(), Shape{rows, k}, {k, 1}}, weight, out.data(), Shape{rows, n}, 2);
      EXPECT_EQ(first_difference(out, want, n), "")
          << rows << " rows" << (transposed ? ", W^T" : "");
    }
  }
  std::vector<float> out(600 * n);
  engine.run(kF32, {x.data(), Shape{4, 32, k}, {32 * k, k, 1}}, {w.data(), Shape{k, n}, {n, 1}},
             out.data(), Shape{4, 32, n}, 0);  // 128 rows in all
  EXPECT_EQ(first_difference(out, documented(x, k, w, n, 128, k, n), n), "") << "[4, 32] rows";
  EXPECT_EQ(engine.cached_primitives(), 0u);
  engine.run(kF32, {x.data(), Shape{127, k}, {k, 1}}, {w.data(), Shape{k, n}, {n, 1}}, out.data(),
             Shape{127, n}, 0);
  EXPECT_EQ(engine.cached_primitives(), 1u);
  engine.run(kF32, {x.data(), Shape{385, k}, {k, 1}}, {w.data(), Shape{k, n}, {n, 1}}, out.data(),
             Shape{385, n}, 0);
  EXPECT_EQ(engine.cached_primitives(), 2u);
}

// A batch folds into rows (the batch of a linear layer), or, where a's matrices are not one
// stride apart, runs matrix by matrix over the one b: the bits are the 2-D product's either way,
// also for matrices of fewer rows than the kernel takes alone.
TEST(MatmulOneB, ABatchGivesThe2DBitsWhetherItFoldsOrNot) {
  if (isa_level() < 4) GTEST_SKIP() << "below AVX-512 these products stay with oneDNN";
  MatmulEngine engine;
  const std::int64_t k = 40, n = 56;
  const std::vector<float> x = random_floats(24 * k, 3), w = random_floats(k * n, 4);
  const std::vector<float> flat = documented(x, k, w, n, 24, k, n);
  for (const auto& [b, t] :
       {std::pair<std::int64_t, std::int64_t>{2, 12}, {6, 4}, {24, 1}, {3, 8}}) {
    std::vector<float> out(flat.size(), -7.0f);
    engine.run(kF32, {x.data(), Shape{b, t, k}, {t * k, k, 1}}, {w.data(), Shape{k, n}, {n, 1}},
               out.data(), Shape{b, t, n}, 0);
    EXPECT_EQ(first_difference(out, flat, n), "") << b << " x " << t << ", folded";
  }
  // The first 5 rows of each block of 6: a gap between matrices, which do not fold.
  std::vector<float> out(4 * 5 * n, -7.0f);
  engine.run(kF32, {x.data(), Shape{4, 5, k}, {6 * k, k, 1}}, {w.data(), Shape{k, n}, {n, 1}},
             out.data(), Shape{4, 5, n}, 2);
  for (std::int64_t m = 0; m < 4; ++m)
    for (std::int64_t i = 0; i < 5 * n; ++i)
      ASSERT_EQ(out[static_cast<std::size_t>(m * 5 * n + i)],
                flat[static_cast<std::size_t>(m * 6 * n + i)])
          << "matrix " << m << ", element " << i;
  EXPECT_EQ(engine.cached_primitives(), 0u);
}

// A bias per column, a residual per element and a per-position operand repeated for each matrix
// (which does not fold with the batch: the folded product then runs without steps and says so).
TEST(MatmulOneB, StepsAreAppliedAsTheProductIsStored) {
  if (isa_level() < 4) GTEST_SKIP() << "below AVX-512 these products stay with oneDNN";
  MatmulEngine engine;
  const std::int64_t b = 3, t = 7, k = 33, n = 50;
  const std::vector<float> x = random_floats(b * t * k, 5), w = random_floats(k * n, 6);
  const std::vector<float> bias = random_floats(n, 7), residual = random_floats(b * t * n, 8);
  const std::vector<float> per_position = random_floats(t * n, 9);
  const std::vector<float> flat = documented(x, k, w, n, b * t, k, n);
  const MatmulOperand xs{x.data(), Shape{b, t, k}, {t * k, k, 1}};
  const MatmulOperand ws{w.data(), Shape{k, n}, {n, 1}};
  const std::array<ProductPostOp, 2> steps{
      ProductPostOp{core::OpKind::kAdd, bias.data(), {0, 0, 1}},
      ProductPostOp{core::OpKind::kMul, residual.data(), {t * n, n, 1}}};
  std::vector<float> out(flat.size());
  bool applied = false;
  engine.run(xs, ws, out.data(), Shape{b, t, n}, 2, steps, &applied);
  EXPECT_TRUE(applied);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const float with_bias = flat[i] + bias[i % n];
    ASSERT_EQ(out[i], with_bias * residual[i]) << i;
  }
  const ProductPostOp repeated{core::OpKind::kSub, per_position.data(), {0, n, 1}};
  engine.run(xs, ws, out.data(), Shape{b, t, n}, 2, std::span(&repeated, 1), &applied);
  EXPECT_FALSE(applied);
  EXPECT_EQ(first_difference(out, flat, n), "");
}

TEST(MatmulOneB, NarrowProductsFourRowsAndStridedRowsStayWithOnednn) {
  MatmulEngine engine;
  const std::vector<float> x = random_floats(32 * 64, 10), w = random_floats(64 * 64, 11);
  std::vector<float> out(32 * 64);
  engine.run(kF32, {x.data(), Shape{32, 64}, {64, 1}}, {w.data(), Shape{64, 8}, {8, 1}}, out.data(),
             Shape{32, 8}, 0);  // 8 columns
  EXPECT_EQ(engine.cached_primitives(), 1u);
  engine.run(kF32, {x.data(), Shape{4, 64}, {64, 1}}, {w.data(), Shape{64, 64}, {64, 1}},
             out.data(), Shape{4, 64}, 0);  // four rows
  EXPECT_EQ(engine.cached_primitives(), 2u);
  engine.run(kF32, {x.data(), Shape{32, 64}, {1, 32}}, {w.data(), Shape{64, 64}, {64, 1}},
             out.data(), Shape{32, 64}, 0);  // x^T @ W: a's rows strided
  EXPECT_EQ(engine.cached_primitives(), 3u);
  // x @ W^T (W stored [out, in]): the one-b GEMM's on AVX-512, which transposes W as it packs
  // it, oneDNN's below (as every product here is).
  engine.run(kF32, {x.data(), Shape{32, 64}, {64, 1}}, {w.data(), Shape{64, 64}, {1, 64}},
             out.data(), Shape{32, 64}, 0);
  EXPECT_EQ(engine.cached_primitives(), isa_level() >= 4 ? 3u : 4u);
}

TEST(MatmulOneB, TransposedWeightsAreTheDocumentedSumOnAvx512) {
  if (isa_level() < 4) GTEST_SKIP() << "below AVX-512, x @ W^T stays with oneDNN";
  MatmulEngine engine;
  // k on both sides of the 16 x 16 transposes' edge, n on both sides of a panel's.
  for (std::int64_t k : {7, 16, 33, 130})
    for (std::int64_t n : {16, 47, 48, 100}) {
      const std::int64_t rows = 29, ldw = k + 2;
      const std::vector<float> x = random_floats(static_cast<std::size_t>(rows * k), 14);
      const std::vector<float> w_out_in = random_floats(static_cast<std::size_t>(n * ldw), 15);
      std::vector<float> w(static_cast<std::size_t>(k * n));  // the same weight stored [in, out]
      for (std::int64_t j = 0; j < k; ++j)
        for (std::int64_t c = 0; c < n; ++c)
          w[static_cast<std::size_t>(j * n + c)] = w_out_in[static_cast<std::size_t>(c * ldw + j)];
      const std::vector<float> want = documented(x, k, w, n, rows, k, n);
      for (int threads : {1, 2}) {
        std::vector<float> out(want.size(), -7.0f);
        engine.run(kF32, {x.data(), Shape{rows, k}, {k, 1}},
                   {w_out_in.data(), Shape{k, n}, {1, ldw}}, out.data(), Shape{rows, n}, threads);
        ASSERT_EQ(first_difference(out, want, n), "") << "k " << k << ", n " << n;
      }
    }
  EXPECT_EQ(engine.cached_primitives(), 0u);
}

// W [in, out] and W^T views (the kernel packs both on every level, though the engine sends only
// AVX-512 the second); 77 rows pack W, 30 and fewer read W [in, out] in place. The row counts
// make tiles of every height from 1 to the tile's (8 rows on AVX-512, 6 below it), each summing
// only its own rows.
TEST(MatmulOneB, EveryIsaLevelAndThreadCountGivesTheSameBits) {
  for (const std::int64_t m : {77, 30, 13, 10, 8, 7, 6, 5, 3, 2, 1}) {
    const std::int64_t k = 65, n = 103, lda = 70, ldb = 110;
    const std::vector<float> x = random_floats(m * lda, 12), w = random_floats(k * ldb, 13);
    std::vector<float> w_t(static_cast<std::size_t>(n * ldb));  // the same weight, [out, in]
    for (std::int64_t j = 0; j < k; ++j)
      for (std::int64_t c = 0; c < n; ++c)
        w_t[static_cast<std::size_t>(c * ldb + j)] = w[static_cast<std::size_t>(j * ldb + c)];
    const std::vector<float> want = documented(x, lda, w, ldb, m, k, n);
    int levels = 0;
    for (int level : {2, 3, 4}) {
      const KernelTable* table = kernel_table_for(level);
      if (!table) continue;
      for (bool transposed : {false, true})
        for (int threads : {1, 2, 3}) {
          std::vector<float> out(want.size(), -7.0f);
          RowProductArgs args;
          args.a = x.data();
          args.a_row_stride = lda;
          args.b = transposed ? w_t.data() : w.data();
          args.b_row_stride = transposed ? 1 : ldb;
          args.b_col_stride = transposed ? ldb : 1;
          args.m = m;
          args.k = k;
          args.n = n;
          args.out = out.data();
          args.num_threads = threads;
          table->gemm_one_b(args);
          EXPECT_EQ(first_difference(out, want, n), "")
              << table->isa << (transposed ? ", W^T" : "") << ", " << threads << " threads, " << m
              << " rows";
        }
      ++levels;
    }
    EXPECT_GE(levels, 1);  // the CPU's own level at least
  }
}

}  // namespace
}  // namespace streamfuse::backends::cpu
