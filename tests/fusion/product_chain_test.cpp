// Product chains (fusion/builders/product_chain): attention as users write it, q @ k^T, its
// scale and mask, softmax, and @ v, runs a tile of rows at a time where the CPU's batched GEMM
// takes both products, with the unfused bits at every shape across the tiles' edges, with masks
// that vary per batch or head, and with other row-wise kernels in the middle; and what the chain
// must not take (a value the user still holds, a v shared by the batch) or cannot run (a few
// rows, no compiled kernel yet) runs as the plans without it, with the same bits.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/isa.h"
#include "fusion/builders/product_chain/builder.h"
#include "fusion/builders/product_chain/optimization.h"
#include "fusion/plan_codec.h"
#include "jit/kernel_cache.h"
#include "runtime/device_runtime.h"
#include "streamfuse/streamfuse.h"
#include "tests/fusion/recorded_segment.h"
#include "tests/own_cache_dir.h"
#include "tests/reference.h"
#include "tests/tensor_bytes.h"

namespace sf = streamfuse;
using sf::Tensor;
using streamfuse::testing::bytes_of;

namespace {

using Program = std::function<std::vector<Tensor>()>;

Tensor random_tensor(sf::Shape shape, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  return sf::testing::tensor_of(
      sf::testing::random_values(static_cast<std::size_t>(shape.numel()), sf::kF32, -2, 2, rng),
      shape, sf::kF32);
}

// Where the batched GEMM runs (x86-64-v3 and up): the chain runs tiled there, and one after the
// other elsewhere.
bool batched_gemm_runs() { return sf::backends::cpu::isa_level() >= 3; }

struct ChainRun {
  std::vector<std::vector<unsigned char>> results;
  std::int64_t chained = 0;   // chains run tiled in the last iteration
  std::int64_t compiled = 0;  // compiled launches in the last iteration
};

ChainRun run(bool fusion, sf::JitMode jit, const Program& program) {
  sf::Config c = sf::config();
  c.fusion = fusion;
  c.jit = jit;
  sf::set_config(c);
  ChainRun r;
  for (int i = 0; i < 4; ++i) {  // the later iterations run the plans and kernels made before
    sf::synchronize();
    if (auto* cache = sf::runtime::DeviceRuntime::get(sf::Device::cpu()).kernel_cache())
      cache->wait_idle();
    const sf::FusionStats before = sf::fusion_stats();
    const std::vector<Tensor> outs = program();
    r.results.clear();
    for (const Tensor& t : outs) r.results.push_back(bytes_of(t));
    const sf::FusionStats after = sf::fusion_stats();
    r.chained = after.chained_products - before.chained_products;
    r.compiled = after.compiled_launches - before.compiled_launches;
  }
  return r;
}

class ProductChainTest : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = sf::config(); }
  void TearDown() override { sf::set_config(saved_); }

  // Unfused, fused and interpreted (the chain runs one after the other: no compiled row kernel),
  // and fused and compiled give the same bits; the compiled run chains `chains` products per
  // iteration where the batched GEMM runs, none elsewhere.
  void check(const std::string& what, const Program& program, std::int64_t chains) {
    SCOPED_TRACE(what);
    const ChainRun unfused = run(false, sf::JitMode::kCompile, program);
    EXPECT_EQ(unfused.chained, 0);
    const ChainRun interpreted = run(true, sf::JitMode::kInterpret, program);
    EXPECT_EQ(interpreted.results, unfused.results) << "fused, interpreted";
    EXPECT_EQ(interpreted.chained, 0);
    const ChainRun compiled = run(true, sf::JitMode::kCompile, program);
    EXPECT_EQ(compiled.results, unfused.results) << "fused, compiled";
    // Without a compiler nothing compiles and the chain runs one after the other.
    const bool compiles = compiled.compiled > 0;
    EXPECT_EQ(compiled.chained, batched_gemm_runs() && compiles ? chains : 0);
  }

  sf::Config saved_;
};

Tensor causal_mask(std::int64_t t) {
  return sf::unsqueeze(sf::arange(t), 1) >= sf::unsqueeze(sf::arange(t), 0);
}

// Causal attention over the heads of `qkv`, the views made as the block makes them: v's just
// before the product that reads it.
Tensor attention(const Tensor& qkv, std::int64_t heads, const Tensor& mask) {
  const std::int64_t b = qkv.size(0), t = qkv.size(1), c = qkv.size(2) / 3;
  const auto head = [&](int i) {
    return qkv.slice(2, i * c, (i + 1) * c).reshape({b, t, heads, c / heads}).permute({0, 2, 1, 3});
  };
  const float scale = 1.0f / std::sqrt(static_cast<float>(c / heads));
  Tensor scores = sf::matmul(head(0), head(1).transpose(-2, -1)) * scale;
  Tensor att = sf::nn::softmax(sf::where(mask, std::move(scores), -INFINITY), -1);
  return sf::matmul(std::move(att), head(2));
}

TEST_F(ProductChainTest, AttentionAsUsersWriteItAcrossTheTilesEdges) {
  // (B, T, H, D): 5 rows (the fewest the batched GEMM takes), rows and columns across its tiles
  // of 6 rows, 48-row tasks and 64-column panels, a head dimension of one panel and more.
  const std::vector<std::array<std::int64_t, 4>> sizes = {
      {1, 5, 2, 8}, {2, 47, 3, 16}, {1, 100, 2, 64}, {2, 130, 2, 33}, {1, 49, 2, 70}};
  for (const auto& [b, t, h, d] : sizes) {
    const Tensor qkv = random_tensor({b, t, 3 * h * d}, 10 + static_cast<std::uint64_t>(t));
    const Tensor mask = causal_mask(t);
    check(
        "B=" + std::to_string(b) + " T=" + std::to_string(t) + " H=" + std::to_string(h) +
            " D=" + std::to_string(d),
        [&] { return std::vector<Tensor>{attention(qkv, h, mask)}; }, 1);
  }
}

TEST_F(ProductChainTest, MasksThatVaryPerBatchOrHeadAndNoMask) {
  const std::int64_t b = 2, h = 3, t = 40, d = 16;
  const Tensor q = random_tensor({b, h, t, d}, 1), k = random_tensor({b, h, t, d}, 2);
  const Tensor v = random_tensor({b, h, t, d}, 3);
  // Key padding per batch ([B, 1, 1, T]), a mask per batch and head ([B, H, T, T]): the kernel
  // reads them at each tile's rows of each matrix.
  const Tensor padding = random_tensor({b, 1, 1, t}, 4) > -1.5f;
  const Tensor per_head = random_tensor({b, h, t, t}, 5) > -1.0f;
  const Tensor bias = random_tensor({1, h, t, t}, 6);
  const auto masked = [&](const Tensor& mask) {
    return [&q, &k, &v, mask] {
      Tensor s = sf::where(mask, sf::matmul(q, k.transpose(-2, -1)) * 0.25f, -INFINITY);
      return std::vector<Tensor>{sf::matmul(sf::nn::softmax(std::move(s), -1), v)};
    };
  };
  check("key padding", masked(padding), 1);
  check("per head", masked(per_head), 1);
  check(
      "no mask",
      [&] {
        return std::vector<Tensor>{
            sf::matmul(sf::nn::softmax(sf::matmul(q, k.transpose(-2, -1)), -1), v)};
      },
      1);
  check(
      "additive bias per head",
      [&] {
        return std::vector<Tensor>{
            sf::matmul(sf::nn::softmax(sf::matmul(q, k.transpose(-2, -1)) + bias, -1), v)};
      },
      1);
}

// The chain skips the scores a causal mask discards and the weights' zero tail: infinities and
// NaNs there give the unfused bits (an infinite v row where the weights are zero makes NaNs, as
// unfused: the chain sums those rows in full).
TEST_F(ProductChainTest, NonFiniteValuesWhereTheMaskDiscardsThem) {
  const std::int64_t b = 1, h = 2, t = 70, d = 8;
  const Tensor mask = causal_mask(t);
  std::vector<double> q_values(static_cast<std::size_t>(b * h * t * d), 0.5);
  std::mt19937_64 rng(31);
  std::uniform_real_distribution<double> u(-1, 1);
  for (double& x : q_values) x = u(rng);
  std::vector<double> k_values = q_values, v_values = q_values;
  // k's last position is NaN (only the last query reads it), v's last position infinite.
  for (std::int64_t i = 0; i < h; ++i)
    for (std::int64_t c = 0; c < d; ++c) {
      k_values[static_cast<std::size_t>((i * t + t - 1) * d + c)] = NAN;
      v_values[static_cast<std::size_t>((i * t + t - 1) * d + c)] = INFINITY;
    }
  const Tensor q = sf::testing::tensor_of(q_values, {b, h, t, d}, sf::kF32);
  const Tensor k = sf::testing::tensor_of(k_values, {b, h, t, d}, sf::kF32);
  const Tensor v = sf::testing::tensor_of(v_values, {b, h, t, d}, sf::kF32);
  const Tensor finite_v = sf::testing::tensor_of(q_values, {b, h, t, d}, sf::kF32);
  for (const Tensor* values : {&v, &finite_v})
    check(
        values == &v ? "infinite v" : "finite v",
        [&] {
          Tensor s = sf::where(mask, sf::matmul(q, k.transpose(-2, -1)) * 0.3f, -INFINITY);
          return std::vector<Tensor>{sf::matmul(sf::nn::softmax(std::move(s), -1), *values)};
        },
        1);
}

// Views recorded among the chain's ops run before them, drops after: here the mask's variable
// dies after v's view, between the softmax that reads the mask and the second product, and the
// product's variable after the second product.
TEST_F(ProductChainTest, ViewsRunBeforeTheChainAndDropsAfterIt) {
  const Tensor q = random_tensor({2, 2, 30, 8}, 41), k = random_tensor({2, 2, 30, 8}, 42);
  const Tensor v_rows = random_tensor({2, 30, 16}, 43), base_mask = causal_mask(30);
  check(
      "the mask dropped between the softmax and the second product",
      [&] {
        // A view of its own, made in the program, whose drop the chain's ops are recorded around.
        std::optional<Tensor> mask = base_mask.reshape({900}).reshape({30, 30});
        Tensor att =
            sf::nn::softmax(sf::where(*mask, sf::matmul(q, k.transpose(-2, -1)), -INFINITY), -1);
        Tensor v = v_rows.reshape({2, 30, 2, 8}).permute({0, 2, 1, 3});
        mask.reset();
        return std::vector<Tensor>{sf::matmul(std::move(att), std::move(v))};
      },
      1);
  check(
      "the product held until after the second product",
      [&] {
        const Tensor product = sf::matmul(q, k.transpose(-2, -1));
        Tensor att = sf::nn::softmax(sf::where(base_mask, product * 0.5f, -INFINITY), -1);
        return std::vector<Tensor>{
            sf::matmul(std::move(att), v_rows.reshape({2, 30, 2, 8}).permute({0, 2, 1, 3}))};
      },
      1);
}

TEST_F(ProductChainTest, OtherRowKernelsInTheMiddle) {
  const Tensor a = random_tensor({3, 20, 12}, 7), b = random_tensor({3, 12, 30}, 8);
  const Tensor c = random_tensor({3, 30, 9}, 9);
  check(
      "rows normalized by their sum of squares",
      [&] {
        const Tensor p = sf::matmul(a, b);
        return std::vector<Tensor>{sf::matmul(p * sf::rsqrt(sf::mean(p * p, -1, true) + 1e-5f), c)};
      },
      1);
  check(
      "log_softmax",
      [&] { return std::vector<Tensor>{sf::matmul(sf::nn::log_softmax(sf::matmul(a, b), -1), c)}; },
      1);
}

// What the chain must not take runs as before: the weights or scores held by the user (they
// must be stored), a v shared by the whole batch (a weight: oneDNN's), too few rows for the
// batched GEMM.
TEST_F(ProductChainTest, WhatItMustNotTakeOrCannotRunGivesTheSameBits) {
  const Tensor q = random_tensor({2, 2, 24, 8}, 11), k = random_tensor({2, 2, 24, 8}, 12);
  const Tensor v = random_tensor({2, 2, 24, 8}, 13), shared_v = random_tensor({24, 8}, 14);
  check(
      "weights held",
      [&] {
        Tensor att = sf::nn::softmax(sf::matmul(q, k.transpose(-2, -1)), -1);
        Tensor y = sf::matmul(att, v);
        return std::vector<Tensor>{y, att};
      },
      0);
  check(
      "scores held",
      [&] {
        Tensor s = sf::matmul(q, k.transpose(-2, -1));
        Tensor y = sf::matmul(sf::nn::softmax(s, -1), v);
        return std::vector<Tensor>{y, s};
      },
      0);
  check(
      "v shared by the batch",
      [&] {
        return std::vector<Tensor>{
            sf::matmul(sf::nn::softmax(sf::matmul(q, k.transpose(-2, -1)), -1), shared_v)};
      },
      0);
  const Tensor q3 = random_tensor({2, 2, 3, 8}, 15), k3 = random_tensor({2, 2, 3, 8}, 16);
  const Tensor v3 = random_tensor({2, 2, 3, 8}, 17);
  check(
      "three rows: the few-row kernels",
      [&] {
        return std::vector<Tensor>{
            sf::matmul(sf::nn::softmax(sf::matmul(q3, k3.transpose(-2, -1)), -1), v3)};
      },
      0);
}

// The chain's result is what the ops give: a v of the wrong length is an error at the call that
// made it, and the next attention runs (and chains) as before.
TEST_F(ProductChainTest, BadInputIsAnErrorAtItsCallAndNothingIsLost) {
  sf::Config c = sf::config();
  c.fusion = true;
  sf::set_config(c);
  const Tensor q = random_tensor({1, 2, 16, 8}, 21), k = random_tensor({1, 2, 16, 8}, 22);
  const Tensor v = random_tensor({1, 2, 16, 8}, 23), bad_v = random_tensor({1, 2, 17, 8}, 24);
  const auto att = [&] { return sf::nn::softmax(sf::matmul(q, k.transpose(-2, -1)), -1); };
  const Tensor good = sf::matmul(att(), v);
  const std::vector<unsigned char> expected = bytes_of(good);
  EXPECT_THROW((void)sf::matmul(att(), bad_v), sf::ShapeError);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(bytes_of(sf::matmul(att(), v)), expected);
}

// The mask guards the product only where every use of it ends in where's true branch.
TEST(ProductChainGuard, OnlyAWhereOverEveryUseGuardsTheProduct) {
  const Tensor p_in = sf::randn({1, 2, 8, 8}), mask = causal_mask(8), bias = sf::randn({8});
  const auto guard_of = [&](const std::function<Tensor(Tensor)>& middle) {
    const Tensor q = sf::randn({1, 2, 8, 4}), k_t = sf::randn({1, 2, 4, 8}),
                 v = sf::randn({1, 2, 8, 4});
    sf::synchronize();
    Tensor y;
    const auto ops =
        sf::testing::record_without_running([&] { y = sf::matmul(middle(sf::matmul(q, k_t)), v); });
    sf::fusion::ProductChainBuilder builder;
    sf::testing::feed(builder, ops);
    if (builder.len() == 0) return -2;
    const auto plan = sf::testing::plan_of(builder, ops);
    const auto& chain =
        dynamic_cast<const sf::fusion::ProductChainOptimization&>(*plan->optimization);
    return chain.guard_for_testing();
  };
  EXPECT_GE(guard_of([&](Tensor p) {
              return sf::nn::softmax(sf::where(mask, std::move(p) * 0.5f, -INFINITY), -1);
            }),
            0);
  EXPECT_EQ(guard_of([&](Tensor p) { return sf::nn::softmax(std::move(p) + bias, -1); }), -1);
  EXPECT_EQ(guard_of([&](Tensor p) {
              Tensor twice = p * 2.0f;
              return sf::nn::softmax(sf::where(mask, std::move(p), std::move(twice)), -1);
            }),
            -1);
  EXPECT_EQ(guard_of([&](Tensor p) {
              Tensor m = sf::max(p, -1, true);
              return sf::nn::softmax(sf::where(mask, std::move(p) - std::move(m), -INFINITY), -1);
            }),
            -1);
}

// A chain's plan persists as its ops: decoding replays the builder, which must take all of them.
TEST(ProductChainPlan, RoundTripsAndRejectsOpsTheBuilderWouldNotTake) {
  const Tensor q = sf::randn({1, 2, 12, 8}), k_t = sf::randn({1, 2, 12, 8}).transpose(-2, -1);
  const Tensor kv = sf::randn({1, 12, 16}), mask = causal_mask(12);
  Tensor y;
  // A segment that starts at the first product (the views of q and k ran before it), with v's
  // view between the softmax and the second product, and the product held until after it.
  const auto ops = sf::testing::record_without_running([&] {
    const Tensor product = sf::matmul(q, k_t);
    y = sf::matmul(sf::nn::softmax(sf::where(mask, product * 0.5f, -INFINITY), -1),
                   kv.reshape({1, 12, 2, 8}).permute({0, 2, 1, 3}));
  });
  sf::fusion::ProductChainBuilder builder;
  sf::testing::feed(builder, ops);
  ASSERT_GT(builder.len(), 4u);
  const auto plan = sf::testing::plan_of(builder, ops);
  const std::string bytes = sf::fusion::encode_plan(*plan);
  const sf::fusion::PlanDraft back = sf::fusion::decode_plan(bytes);
  EXPECT_EQ(back.ops, plan->ops);
  ASSERT_NE(dynamic_cast<const sf::fusion::ProductChainOptimization*>(back.optimization.get()),
            nullptr);
  EXPECT_EQ(back.optimization->len(), plan->optimization->len());
  // Without the drop that ends it, the scores would still be held: the builder would not take
  // the plan.
  ASSERT_EQ(plan->ops.back().kind, sf::core::OpKind::kDrop);
  sf::fusion::ExecutionPlan changed;
  changed.ops = plan->ops;
  changed.ops.back().inputs[0] = changed.ops.front().inputs[0];  // drops q instead
  changed.optimization = plan->optimization;
  changed.triggers = plan->triggers;
  EXPECT_THROW(sf::fusion::decode_plan(sf::fusion::encode_plan(changed)), sf::cache::FormatError);
  for (std::size_t n = 0; n < bytes.size(); ++n)
    EXPECT_THROW(sf::fusion::decode_plan(std::string_view(bytes).substr(0, n)),
                 sf::cache::FormatError)
        << n;
}

}  // namespace
