// Preparing matmuls ahead of their first run: prepare() makes the oneDNN primitive that a later
// run() with the same shapes and strides uses (run reports the process's first use of each), it
// checks the shapes it is given (they come from files), and racing threads build a primitive once.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <streamfuse/streamfuse.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "backends/cpu/matmul.h"
#include "runtime/device_runtime.h"
#include "streamfuse/error.h"
#include "tests/own_cache_dir.h"

namespace streamfuse::backends::cpu {
namespace {

struct Product {
  std::int64_t m, k, n;
  std::vector<float> a = std::vector<float>(static_cast<std::size_t>(m * k), 1.0f);
  std::vector<float> b = std::vector<float>(static_cast<std::size_t>(k * n), 0.5f);
  std::vector<float> out = std::vector<float>(static_cast<std::size_t>(m * n), -1.0f);

  MatmulOperand lhs() const { return {a.data(), Shape{m, k}, {k, 1}}; }
  MatmulOperand rhs() const { return {b.data(), Shape{k, n}, {n, 1}}; }
  Shape out_shape() const { return Shape{m, n}; }
  bool run(MatmulEngine& e) { return e.run(kF32, lhs(), rhs(), out.data(), out_shape(), 0); }
  bool prepare(MatmulEngine& e) const { return e.prepare(kF32, lhs(), rhs(), out_shape(), 0); }
};

// Whether this CPU's oneDNN runs a plain f32 product through its GEMM driver ("gemm:jit"), as it
// runs every f32 product where it has no brgemm kernels (a CPU without AVX-512). Only the
// process's first product through the driver is worth preparing
// (OnlyTheFirstProductThroughTheGemmDriverIsWorthPreparing); elsewhere a product's primitive
// generates code when it is made, and each one's first run is.
bool plain_products_use_gemm_driver() {
  static const bool driver = [] {
    using md = dnnl::memory::desc;
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    const md a({16, 32}, dt::f32, tag::ab);
    const md b({32, 8}, dt::f32, tag::ab);
    const md c({16, 8}, dt::f32, tag::ab);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), engine);
    return std::string(pd.impl_info_str()) == "gemm:jit";
  }();
  return driver;
}

// Skips a test that needs the next product through oneDNN to be reported, where that product
// goes through the driver and the driver has run in this process already (a test before it in
// the same process; the cache directory is this program's own, so nothing was prepared from it).
#define SKIP_UNLESS_A_DRIVER_PRODUCT_WOULD_BE_REPORTED()                                        \
  if (plain_products_use_gemm_driver() && MatmulEngine::gemm_driver_ready())                    \
  GTEST_SKIP() << "oneDNN runs plain products through its GEMM driver here, and it has run in " \
                  "this process: only its first product is remembered"

TEST(MatmulPrepare, MakesThePrimitiveTheFirstRunUses) {
  MatmulEngine engine;
  Product p{16, 32, 8};
  EXPECT_TRUE(p.prepare(engine));
  EXPECT_EQ(engine.cached_primitives(), 1u);
  EXPECT_TRUE(p.prepare(engine));  // again: found, nothing new
  EXPECT_EQ(engine.cached_primitives(), 1u);
  // The first run of the prepared primitive; through the driver, prepare() ran the driver's
  // first product already.
  EXPECT_EQ(p.run(engine), !plain_products_use_gemm_driver());
  EXPECT_EQ(engine.cached_primitives(), 1u);
  EXPECT_FLOAT_EQ(p.out[0], 16.0f);  // 32 * 1 * 0.5
  EXPECT_FALSE(p.run(engine));       // not the first any more
}

TEST(MatmulPrepare, ARunWithoutPreparationReportsItsFirstUseOnce) {
  SKIP_UNLESS_A_DRIVER_PRODUCT_WOULD_BE_REPORTED();
  MatmulEngine engine;
  Product p{4, 8, 4};
  EXPECT_TRUE(p.run(engine));
  EXPECT_FALSE(p.run(engine));
  Product other{4, 8, 5};  // another shape: another primitive, worth preparing unless the driver's
  EXPECT_EQ(other.run(engine), !plain_products_use_gemm_driver());
  EXPECT_EQ(engine.cached_primitives(), 2u);
}

TEST(MatmulPrepare, IntegerAndEmptyProductsPrepareNothing) {
  MatmulEngine engine;
  const Shape a{4, 8}, b{8, 2};
  EXPECT_FALSE(engine.prepare(kI32, {nullptr, a, {8, 1}}, {nullptr, b, {2, 1}}, Shape{4, 2}, 0));
  EXPECT_FALSE(
      engine.prepare(kF32, {nullptr, Shape{0, 8}, {8, 1}}, {nullptr, b, {2, 1}}, Shape{0, 2}, 0));
  EXPECT_EQ(engine.cached_primitives(), 0u);
}

TEST(MatmulPrepare, ShapesThatAreNotAProductAreShapeErrors) {
  MatmulEngine engine;
  const MatmulOperand a{nullptr, Shape{4, 8}, {8, 1}};
  EXPECT_THROW(engine.prepare(kF32, a, {nullptr, Shape{7, 2}, {2, 1}}, Shape{4, 2}, 0),
               ShapeError);  // inner dimensions differ
  EXPECT_THROW(engine.prepare(kF32, a, {nullptr, Shape{8, 2}, {2, 1}}, Shape{4, 3}, 0),
               ShapeError);  // wrong result
  EXPECT_THROW(engine.prepare(kF32, a, {nullptr, Shape{8, 2}, {2, 1}}, Shape{4}, 0),
               ShapeError);  // wrong rank
  EXPECT_THROW(
      engine.prepare(kF32, a, {nullptr, Shape{8, 2}, {std::int64_t{1} << 50, 1}}, Shape{4, 2}, 0),
      ShapeError);  // a stride no tensor has
  EXPECT_THROW(engine.prepare(kF32, {nullptr, Shape{3, 4, 8}, {32, 8, 1}},
                              {nullptr, Shape{2, 8, 2}, {16, 2, 1}}, Shape{3, 4, 2}, 0),
               ShapeError);  // batch dimensions that do not broadcast
  EXPECT_EQ(engine.cached_primitives(), 0u);
  // A broadcast batch is fine.
  EXPECT_TRUE(engine.prepare(kF32, {nullptr, Shape{3, 4, 8}, {32, 8, 1}},
                             {nullptr, Shape{8, 2}, {2, 1}}, Shape{3, 4, 2}, 0));
}

TEST(MatmulPrepare, ThreadsThatRaceForOnePrimitiveBuildItOnce) {
  MatmulEngine engine;
  constexpr int kThreads = 8;
  std::vector<Product> products(kThreads, Product{32, 64, 8});  // narrow: oneDNN
  std::vector<int> first_uses(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      if (t % 2 == 0) products[static_cast<std::size_t>(t)].prepare(engine);
      first_uses[static_cast<std::size_t>(t)] = products[static_cast<std::size_t>(t)].run(engine);
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(engine.cached_primitives(), 1u);
  int firsts = 0;
  for (int f : first_uses) firsts += f;
  // Exactly one run was the first; through the driver, none where a prepare() ran it first.
  if (plain_products_use_gemm_driver())
    EXPECT_LE(firsts, 1);
  else
    EXPECT_EQ(firsts, 1);
  for (const Product& p : products) EXPECT_FLOAT_EQ(p.out.back(), 32.0f);
}

// k^T @ q over views of one [B, T, 3 * H * D] projection: a batched product with strided
// operands, a's rows strided along k, which oneDNN runs through its GEMM driver (attention's own
// products, whose a rows are contiguous, run in the library's kernels where the CPU has FMA). The
// driver generates its kernels the first time it runs any product (20-25 ms); preparing such a
// product must do that, so that a process with a warm cache does not pay it in its first
// iteration.
TEST(MatmulPrepare, PreparingAProductOfTheGemmDriverGeneratesItsKernels) {
  // ctest runs each test in a process of its own; where the tests run in one process, an earlier
  // one may have run the driver (every product before this one, where oneDNN has no brgemm).
  if (MatmulEngine::gemm_driver_ready()) GTEST_SKIP() << "the GEMM driver has run in this process";
  constexpr std::int64_t B = 2, H = 3, T = 16, D = 8, row = 3 * H * D;
  const MatmulOperand k_t{nullptr, Shape{B, H, D, T}, {T * row, D, 1, row}};
  const MatmulOperand q{nullptr, Shape{B, H, T, D}, {T * row, D, row, 1}};
  MatmulEngine engine;
  EXPECT_TRUE(engine.prepare(kF32, k_t, q, Shape{B, H, D, D}, 0));
  EXPECT_TRUE(MatmulEngine::gemm_driver_ready());

  // The prepared product runs and computes what it should.
  std::vector<float> qkv(static_cast<std::size_t>(B * T * row));
  for (std::size_t i = 0; i < qkv.size(); ++i) qkv[i] = static_cast<float>(i % 7) - 3.0f;
  std::vector<float> out(static_cast<std::size_t>(B * H * D * D));
  const MatmulOperand kd{qkv.data() + H * D, k_t.shape, k_t.strides};
  const MatmulOperand qd{qkv.data(), q.shape, q.strides};
  // Its first run; not worth preparing again: the driver has run (OnlyTheFirstProduct... below).
  EXPECT_FALSE(engine.run(kF32, kd, qd, out.data(), Shape{B, H, D, D}, 0));
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < D; ++i)
        for (std::int64_t j = 0; j < D; ++j) {
          float expected = 0;
          for (std::int64_t t = 0; t < T; ++t)
            expected += qkv[static_cast<std::size_t>(b * T * row + t * row + H * D + h * D + i)] *
                        qkv[static_cast<std::size_t>(b * T * row + t * row + h * D + j)];
          ASSERT_EQ(out[static_cast<std::size_t>(((b * H + h) * D + i) * D + j)], expected)
              << b << " " << h << " " << i << " " << j;  // small integers: exact in any order
        }
}

// The GEMM driver's primitives take microseconds to make, and a loop over a growing context makes
// one per context length: once the driver has run, their first runs are not reported as worth
// preparing (they would crowd the bounded list of prepared ops), while other new shapes still are.
TEST(MatmulPrepare, OnlyTheFirstProductThroughTheGemmDriverIsWorthPreparing) {
  constexpr std::int64_t H = 2, D = 8;
  MatmulEngine engine;
  // att @ v of 8 positions over a cache of `t`: [H, 8, t] x [H, t, D], v a view of a
  // [t, 2, H * D] cache, att read through a transposed view (its rows strided along t), which
  // takes the driver. (With att's rows contiguous these run in the library's own kernels.)
  const auto att_v = [&](std::int64_t t) {
    std::vector<float> att(static_cast<std::size_t>(H * 8 * t), 0.5f);
    std::vector<float> cache(static_cast<std::size_t>(t * 2 * H * D), 1.0f);
    std::vector<float> out(static_cast<std::size_t>(H * 8 * D));
    const MatmulOperand a{att.data(), Shape{H, 8, t}, {8 * t, 1, 8}};
    const MatmulOperand v{cache.data() + H * D, Shape{H, t, D}, {D, 2 * H * D, 1}};
    const bool first = engine.run(kF32, a, v, out.data(), Shape{H, 8, D}, 0);
    EXPECT_EQ(out[0], static_cast<float>(t) * 0.5f);
    return first;
  };
  att_v(3);  // the driver has run now, whether this or an earlier test ran it first
  ASSERT_TRUE(MatmulEngine::gemm_driver_ready());
  for (std::int64_t t = 4; t < 8; ++t) EXPECT_FALSE(att_v(t)) << t;
  Product plain{3, 16, 5};  // a primitive that generates code when made, where oneDNN has them
  EXPECT_EQ(plain.run(engine), !plain_products_use_gemm_driver());
}

// Through the device runtime: the first run of each matmul is remembered with the shapes and
// strides the product read, for the cache directory and bundles.
TEST(MatmulPrepare, TheRuntimeRemembersTheMatmulsItUsed) {
  SKIP_UNLESS_A_DRIVER_PRODUCT_WOULD_BE_REPORTED();
  Tensor a = randn({6, 10}), b = randn({5, 10});
  Tensor c = matmul(a, transpose(b, 0, 1));  // b read through a transposed view
  synchronize();
  const auto used = runtime::DeviceRuntime::get(Device::cpu()).used_prepared_ops();
  const PreparedOp* found = nullptr;
  for (const PreparedOp& p : used)
    if (p.op.inputs[0].shape == Shape{6, 10} && p.op.inputs[1].shape == Shape{10, 5}) found = &p;
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->op.kind, core::OpKind::kMatmul);
  EXPECT_EQ(found->op.outputs[0].shape, (Shape{6, 5}));
  EXPECT_EQ(found->input_strides[1][0], 1);  // the transposed view's strides
  EXPECT_EQ(found->input_strides[1][1], 10);
  // A backend that has not seen it prepares it from that description.
  MatmulEngine fresh;
  EXPECT_TRUE(fresh.prepare(kF32, {nullptr, found->op.inputs[0].shape, found->input_strides[0]},
                            {nullptr, found->op.inputs[1].shape, found->input_strides[1]},
                            found->op.outputs[0].shape, 0));
}

// A product with steps applied as it is stored (a matmul plan) is remembered with its post-ops,
// and preparing that description makes the primitive a run with those post-ops uses.
TEST(MatmulPrepare, ProductsWithPostOpsAreRememberedAndPreparedWithThem) {
  SKIP_UNLESS_A_DRIVER_PRODUCT_WOULD_BE_REPORTED();
  Tensor a = randn({7, 12}), b = randn({12, 9}), bias = randn({9}), r = randn({7, 9});
  synchronize();
  Tensor c = matmul(a, b) * 0.5f + bias + r;
  synchronize();
  const auto used = runtime::DeviceRuntime::get(Device::cpu()).used_prepared_ops();
  const PreparedOp* found = nullptr;
  for (const PreparedOp& p : used)
    if (p.op.inputs[0].shape == Shape{7, 12} && !p.post_ops.empty()) found = &p;
  ASSERT_NE(found, nullptr) << "fused products in this process: " << fusion_stats().fused_products;
  ASSERT_EQ(found->post_ops.size(), 3u);
  EXPECT_EQ(found->post_ops[0].kind, core::OpKind::kMul);
  EXPECT_EQ(found->post_ops[0].strides, (std::array<std::int64_t, kMaxRank>{}));  // a scalar
  EXPECT_EQ(found->post_ops[1].kind, core::OpKind::kAdd);
  EXPECT_EQ(found->post_ops[1].strides[0], 0);  // the bias: one row for every row
  EXPECT_EQ(found->post_ops[1].strides[1], 1);
  EXPECT_EQ(found->post_ops[2].strides[0], 9);  // the residual
  // A fresh backend prepares it, and the run with the same post-ops is that primitive's first
  // (reported unless it runs through the driver, which prepare() ran).
  MatmulEngine fresh;
  std::vector<ProductPostOp> post_ops;
  for (const PreparedOp::PostOp& p : found->post_ops)
    post_ops.push_back({p.kind, nullptr, p.strides});
  EXPECT_TRUE(fresh.prepare(kF32, {nullptr, found->op.inputs[0].shape, found->input_strides[0]},
                            {nullptr, found->op.inputs[1].shape, found->input_strides[1]},
                            found->op.outputs[0].shape, 0, post_ops));
  EXPECT_EQ(fresh.cached_primitives(), 1u);
  const std::vector<float> lhs(7 * 12, 1.0f), rhs(12 * 9, 0.5f), row(9, 2.0f), full(7 * 9, 3.0f);
  const float half = 0.5f;
  std::vector<float> out(7 * 9);
  post_ops[0].data = &half;
  post_ops[1].data = row.data();
  post_ops[2].data = full.data();
  bool applied = false;
  EXPECT_EQ(fresh.run({lhs.data(), Shape{7, 12}, {12, 1}}, {rhs.data(), Shape{12, 9}, {9, 1}},
                      out.data(), Shape{7, 9}, 0, post_ops, &applied),
            !plain_products_use_gemm_driver());
  EXPECT_EQ(fresh.cached_primitives(), 1u);
  // Where oneDNN has no brgemm kernel (no AVX-512), its post-ops do not give the unfused bits and
  // the product is stored alone (matmul_onednn.cpp): the plan the run finds is still prepared.
  EXPECT_EQ(out[0], applied ? 12 * 0.5f * 0.5f + 2.0f + 3.0f : 12 * 0.5f);
}

}  // namespace
}  // namespace streamfuse::backends::cpu
