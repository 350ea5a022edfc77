// Products with fused epilogues (fusion/builders/matmul): a product and the bias adds, residual
// adds and scaling after it store one tensor (oneDNN post-ops on the CPU), with the unfused bits
// in every layout, broadcast and special value, and the chains it must not take (the product on
// the right of - or /, a value something still holds, other dtypes) run as before.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/isa.h"
#include "backends/cpu/matmul.h"
#include "fusion/builders/matmul/builder.h"
#include "fusion/builders/registry.h"
#include "runtime/device_runtime.h"
#include "streamfuse/streamfuse.h"
#include "tests/fusion/chain_fusion.h"
#include "tests/own_cache_dir.h"
#include "tests/reference.h"
#include "tests/tensor_bytes.h"

namespace sf = streamfuse;
using sf::Tensor;
using streamfuse::testing::bytes_of;
using streamfuse::testing::Chain;

namespace {

Tensor random_tensor(sf::Shape shape, std::uint64_t seed, sf::DType dtype = sf::kF32) {
  std::mt19937_64 rng(seed);
  return sf::testing::tensor_of(
      sf::testing::random_values(static_cast<std::size_t>(shape.numel()), dtype, -2, 2, rng), shape,
      dtype);
}

struct ProductRun {
  std::vector<std::vector<unsigned char>> results;
  std::int64_t fused_products = 0;  // in the last iteration
};

ProductRun run(bool fusion, const Chain& chain, const std::vector<Tensor>& inputs) {
  sf::Config c = sf::config();
  c.fusion = fusion;
  sf::set_config(c);
  ProductRun r;
  for (int i = 0; i < 4; ++i) {  // the last iterations run the plans the first one made
    sf::synchronize();
    const std::int64_t before = sf::fusion_stats().fused_products;
    std::vector<Tensor> outs = chain(inputs);
    r.results.clear();
    for (const Tensor& t : outs) r.results.push_back(bytes_of(t));
    r.fused_products = sf::fusion_stats().fused_products - before;
  }
  return r;
}

// Whether this machine's oneDNN stores plain f32 products with post-ops: only its brgemm
// kernels give the unfused bits with them (backends/cpu/matmul_onednn.cpp), and a CPU without
// AVX-512 has none (ONEDNN_MAX_CPU_ISA=AVX2 shows it). There the tests still check every result
// bit for bit, and that only the library's own kernels' products fuse their steps. (The probe's
// product has 8 columns: a wider one runs in the library's one-b GEMM on a CPU with FMA.)
bool onednn_takes_post_ops() {
  static const bool takes = [] {
    const sf::Config saved = sf::config();
    sf::Config c = saved;
    c.fusion = true;
    sf::set_config(c);
    const Tensor x = random_tensor({32, 48}, 90), w = random_tensor({48, 8}, 91);
    const Tensor b = random_tensor({8}, 92);
    std::int64_t fused = 0;
    for (int i = 0; i < 3; ++i) {
      sf::synchronize();
      const std::int64_t before = sf::fusion_stats().fused_products;
      (void)bytes_of(sf::matmul(x, w) + b);
      fused = sf::fusion_stats().fused_products - before;
    }
    sf::set_config(saved);
    return fused == 1;
  }();
  return takes;
}

// Whether an f32 linear layer of `rows` rows (more than four, 16 columns or more) runs in the
// library's one-b GEMM, which takes every step: on AVX-512, on AVX2 at 128 to 384 rows.
bool one_b_gemm(std::int64_t rows) {
  return streamfuse::backends::cpu::one_b_gemm_takes_rows(rows);
}

class MatmulFusionTest : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = sf::config(); }
  void TearDown() override { sf::set_config(saved_); }

  // Fused gives the unfused bits, and `products` products per iteration apply their steps as
  // they are stored: through oneDNN where it takes post-ops (onednn_takes_post_ops), through the
  // library's own kernels (`dot_rows`: products of one row or column, the batched GEMM's or the
  // one-b GEMM's) on every machine that runs them.
  void check(const std::string& what, const Chain& chain, const std::vector<Tensor>& inputs,
             std::int64_t products, bool dot_rows = false) {
    SCOPED_TRACE(what);
    for (const Tensor& t : inputs) (void)bytes_of(t);
    const ProductRun unfused = run(false, chain, inputs);
    EXPECT_EQ(unfused.fused_products, 0);
    const ProductRun fused = run(true, chain, inputs);
    EXPECT_EQ(fused.results, unfused.results) << "fused != unfused";
    if (dot_rows || onednn_takes_post_ops() || products == 0) {
      EXPECT_EQ(fused.fused_products, products) << "products with fused steps per iteration";
    } else {
      EXPECT_EQ(fused.fused_products, 0) << "oneDNN took post-ops the probe said it does not take";
    }
  }

  sf::Config saved_;
};

TEST_F(MatmulFusionTest, LinearLayersAddTheirBiasAsTheyStore) {
  struct Size {
    std::int64_t m, k, n;
  };
  for (const Size s : {Size{33, 100, 50}, Size{128, 96, 200}, Size{7, 768, 768}, Size{2, 3, 5}}) {
    const Tensor x = random_tensor({s.m, s.k}, 1);
    const Tensor w = random_tensor({s.n, s.k}, 2);  // stored as nn.Linear stores it
    const Tensor b = random_tensor({s.n}, 3);
    check(
        "x @ w^T + b at " + std::to_string(s.m) + "x" + std::to_string(s.k) + "x" +
            std::to_string(s.n),
        [](const std::vector<Tensor>& in) {
          return std::vector<Tensor>{sf::matmul(in[0], sf::transpose(in[1], 0, 1)) + in[2]};
        },
        {x, w, b}, 1, s.n >= 16 && s.m > 4 && one_b_gemm(s.m));
  }
}

TEST_F(MatmulFusionTest, ResidualAddsScalesAndBroadcastsInOneStore) {
  const Tensor x = random_tensor({64, 48}, 4), w = random_tensor({48, 80}, 5);
  const Tensor b = random_tensor({80}, 6), r = random_tensor({64, 80}, 7);
  const Tensor col = random_tensor({64, 1}, 8), row = random_tensor({1, 80}, 9);
  check(
      "bias and residual",
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{sf::matmul(in[0], in[1]) + in[2] + in[3]};
      },
      {x, w, b, r}, 1, one_b_gemm(64));
  check(
      "the residual first, the product on the right of +",
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{in[3] + (sf::matmul(in[0], in[1]) * 0.125f)};
      },
      {x, w, b, r}, 1, one_b_gemm(64));
  check(
      "four steps: sub, mul by a row, a scalar, add",
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{(sf::matmul(in[0], in[1]) - in[3]) * in[4] - 3.0f + in[2]};
      },
      {x, w, b, r, row}, 1, one_b_gemm(64));
  // oneDNN 2.6 has no kernel for a post-op operand that varies along m only: the product is
  // stored alone and the steps run as one element-wise kernel after it. The one-b GEMM takes it.
  check(
      "a column: the steps run after the product unless the one-b GEMM takes them",
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{sf::matmul(in[0], in[1]) / in[2] + in[3]};
      },
      {x, w, col, r}, one_b_gemm(64) ? 1 : 0, one_b_gemm(64));
  // (Were the four's result not kept, the fifth's kernel would take all five: as many bytes
  // saved, and steps the product leaves to the kernel after it go there; see
  // StepsTheKernelAfterItWouldTakeGoThere.)
  check(
      "five steps, the first four's result kept: the fifth runs after the fused four",
      [](const std::vector<Tensor>& in) {
        const Tensor four = sf::matmul(in[0], in[1]) + in[2] + in[2] + in[2] + in[2];
        return std::vector<Tensor>{four, four * 2.0f};
      },
      {x, w, b}, 1, one_b_gemm(64));
}

TEST_F(MatmulFusionTest, BatchedProductsAndAttentionScores) {
  const Tensor x = random_tensor({3, 20, 16}, 10), w = random_tensor({16, 24}, 11);
  const Tensor b = random_tensor({24}, 12), r = random_tensor({3, 20, 24}, 13);
  check(
      "batched x @ w + b + r",
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{sf::matmul(in[0], in[1]) + in[2] + in[3]};
      },
      {x, w, b, r}, 1, one_b_gemm(60));  // 60 rows of one w: the one-b GEMM on AVX-512
  // The batched product runs as one product of 3 x 20 rows (backends/cpu/matmul_batch_rows.h);
  // an operand per position repeated for each matrix does not fold with it, so the product is
  // stored alone and the steps run after it, whether fusion is on or off: the same bits.
  const Tensor per_position = random_tensor({20, 24}, 21);
  check(
      "batched x @ w + an operand per position",
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{sf::matmul(in[0], in[1]) + in[2]};
      },
      {x, w, per_position}, 0);
  // Attention's scores: q @ k^T over heads (the library's batched GEMM where the CPU has FMA),
  // scaled, then a mask per (query, key) broadcast over batch and heads.
  const bool batched_gemm = sf::backends::cpu::isa_level() >= 3;
  const Tensor q = random_tensor({2, 4, 12, 8}, 14), k = random_tensor({2, 4, 12, 8}, 15);
  const Tensor mask = random_tensor({12, 12}, 16);
  check(
      "q @ k^T * scale",
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{sf::matmul(in[0], sf::transpose(in[1], -2, -1)) * 0.35355339f};
      },
      {q, k}, 1, batched_gemm);
  // A mask per (query, key), broadcast over batch and heads: no oneDNN 2.6 kernel takes it; the
  // library's batched GEMM applies it as it stores.
  check(
      "q @ k^T * scale + mask",
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{sf::matmul(in[0], sf::transpose(in[1], -2, -1)) * 0.35355339f +
                                   in[2]};
      },
      {q, k, mask}, batched_gemm ? 1 : 0, batched_gemm);
  // 1-D operands: a row times a matrix (through oneDNN), a matrix times a column (the dot-row
  // kernel, which applies the steps as it stores each result).
  const Tensor v = random_tensor({16}, 17), m = random_tensor({5, 16}, 18);
  const Tensor bn = random_tensor({24}, 19), bm = random_tensor({5}, 20);
  check(
      "vector @ matrix + b",
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{sf::matmul(in[0], in[1]) + in[2]};
      },
      {v, w, bn}, 1);
  check(
      "matrix @ vector + b",
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{sf::matmul(in[0], in[1]) * in[2]};
      },
      {m, v, bm}, 1, /*dot_rows=*/true);
}

// A decode step's products have one row: the dot-row kernel (f32, operands contiguous along k)
// applies the steps as it stores each result, over batches and broadcasts too.
TEST_F(MatmulFusionTest, DecodeStepsFuseIntoTheDotRowKernel) {
  const Tensor x = random_tensor({1, 96}, 40), w = random_tensor({200, 96}, 41);
  const Tensor b = random_tensor({200}, 42), r = random_tensor({1, 200}, 43);
  check(
      "x @ W^T + b + r, one row",
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{sf::matmul(in[0], sf::transpose(in[1], 0, 1)) + in[2] + in[3]};
      },
      {x, w, b, r}, 1, /*dot_rows=*/true);
  // Attention's scores for one query over heads: q [B, H, 1, D] @ k^T (k [B, H, T, D]), scaled,
  // then a per-head bias [H, 1, T] broadcast over the batch, divided by a scalar.
  const Tensor q = random_tensor({2, 3, 1, 16}, 44), k = random_tensor({2, 3, 40, 16}, 45);
  const Tensor bias = random_tensor({3, 1, 40}, 46);
  check(
      "q @ k^T * scale + per-head bias, batched",
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{
            (sf::matmul(in[0], sf::transpose(in[1], -2, -1)) * 0.25f + in[2]) / 3.0f};
      },
      {q, k, bias}, 1, /*dot_rows=*/true);
  // And a long row with the bias read through a stepped view.
  const Tensor w2 = random_tensor({3000, 64}, 47), x2 = random_tensor({1, 64}, 48);
  const Tensor b2 = random_tensor({6000}, 49).slice(0, 0, 6000, 2);
  check(
      "a stepped bias over 3000 results",
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{sf::matmul(in[0], sf::transpose(in[1], 0, 1)) - in[2]};
      },
      {x2, w2, b2}, 1, /*dot_rows=*/true);
}

TEST_F(MatmulFusionTest, SpecialValuesRoundAsTheOpsDo) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = random_tensor({4, 6}, 21), w = random_tensor({6, 5}, 22);
  const Tensor b = sf::testing::tensor_of({0.0, -0.0, inf, -inf, nan}, {5}, sf::kF32);
  const Tensor z = sf::testing::tensor_of({0.0, -0.0, 1e-45, 3e38, -1.0}, {5}, sf::kF32);
  check(
      "+ special values, / zeros and extremes",
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{(sf::matmul(in[0], in[1]) + in[2]) / in[3],
                                   sf::matmul(in[0], in[1]) * in[3] * 3e38f};
      },
      {x, w, b, z}, 2);
}

TEST_F(MatmulFusionTest, ChainsItMustNotTakeRunAsBefore) {
  const Tensor x = random_tensor({16, 8}, 23), w = random_tensor({8, 12}, 24);
  const Tensor r = random_tensor({16, 12}, 25), b = random_tensor({12}, 26);
  check(
      "the product on the right of -",
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{in[2] - sf::matmul(in[0], in[1])};
      },
      {x, w, r}, 0);
  check(
      "the product kept as well as the sum",
      [](const std::vector<Tensor>& in) {
        const Tensor h = sf::matmul(in[0], in[1]);
        return std::vector<Tensor>{h, h + in[2]};
      },
      {x, w, b}, 0);
  check(
      "f16 operands",
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{sf::matmul(in[0], in[1]) + in[2]};
      },
      {x.to(sf::kF16), w.to(sf::kF16), b.to(sf::kF16)}, 0);
  check(
      "a bias of another dtype",
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{sf::matmul(in[0], in[1]) + in[2]};
      },
      {x, w, b.to(sf::kF16)}, 0);
}

// Steps the kernel reading the product would take as well (an activation's, a softmax's) save as
// many bytes there, in every layout: the product stores alone and that kernel applies them.
// Where nothing after the steps would take them, the product applies them as it stores.
TEST_F(MatmulFusionTest, StepsTheKernelAfterItWouldTakeGoThere) {
  const Tensor x = random_tensor({3, 16, 8}, 50), w = random_tensor({8, 12}, 51);
  const Tensor b = random_tensor({12}, 52), w2 = random_tensor({12, 6}, 53);
  check(
      "an activation after the bias: its kernel adds the bias",
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{sf::relu(sf::matmul(in[0], in[1]) + in[2])};
      },
      {x, w, b}, 0);
  check(
      "the bias before another product: stored with the first product",
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{sf::matmul(sf::matmul(in[0], in[1]) + in[2], in[3])};
      },
      {x, w, b, w2}, 1);
  const Tensor q = random_tensor({2, 3, 10, 8}, 54), k = random_tensor({2, 3, 10, 8}, 55);
  check(
      "attention's scores, scaled, masked and normalized: one kernel after the product",
      [](const std::vector<Tensor>& in) {
        const Tensor mask = sf::unsqueeze(sf::arange(10), 1) >= sf::unsqueeze(sf::arange(10), 0);
        const Tensor scores = sf::matmul(in[0], sf::transpose(in[1], -2, -1)) * 0.35355339f;
        return std::vector<Tensor>{sf::nn::softmax(sf::where(mask, scores, -INFINITY), -1)};
      },
      {q, k}, 0);
}

// Batched shapes, so that no plan an earlier test made for a held product (one that keeps it) is
// matched first: a stored plan is used wherever its ops recur.
TEST_F(MatmulFusionTest, AHeldValueDroppedLaterStillFuses) {
  const Tensor x = random_tensor({2, 16, 8}, 27), w = random_tensor({8, 12}, 28);
  const Tensor b = random_tensor({12}, 29), r = random_tensor({2, 16, 12}, 30);
  check(
      "named values dropped at the end of their scope",
      [](const std::vector<Tensor>& in) {
        Tensor out;
        {
          const Tensor h = sf::matmul(in[0], in[1]);
          const Tensor biased = h + in[2];
          out = biased + in[3];
        }
        return std::vector<Tensor>{out};
      },
      {x, w, b, r}, 1);
}

TEST_F(MatmulFusionTest, AFailedOperandFailsTheResultWithItsError) {
  const Tensor x = random_tensor({4, 8}, 31), w = random_tensor({8, 6}, 32);
  const Tensor table = random_tensor({3, 6}, 33);
  const Tensor bad = sf::testing::tensor_of({0, 7, 1, 2}, {4}, sf::kI64);
  for (bool fusion : {false, true}) {
    sf::Config c = sf::config();
    c.fusion = fusion;
    sf::set_config(c);
    for (int i = 0; i < 3; ++i) {
      const Tensor bias = sf::index_select(table, 0, bad);  // fails: index 7 of 3 rows
      const Tensor y = sf::matmul(x, w) + bias + 1.0f;
      try {
        (void)bytes_of(y);
        ADD_FAILURE() << "no error";
      } catch (const sf::Error& e) {
        EXPECT_NE(std::string(e.what()).find("index_select"), std::string::npos) << e.what();
      }
    }
  }
}

// The kind is made only for backends that apply steps as they store a product: elsewhere (CUDA)
// a product and one element-wise kernel after it is what the element-wise builder already makes.
class NoEpilogueBackend final : public streamfuse::backends::Backend {
 public:
  sf::Device device() const override { return sf::Device::cpu(); }
  void configure(const streamfuse::backends::BackendSettings&) override {}
  void execute(const streamfuse::core::OpDesc&, std::span<streamfuse::backends::TensorHandle>,
               std::span<streamfuse::backends::TensorHandle>) override {}
  streamfuse::backends::TensorHandle allocate(const sf::Shape&, sf::DType) override { return {}; }
  streamfuse::backends::TensorHandle from_host(const void*, sf::DType, const sf::Shape&) override {
    return {};
  }
  void copy(const sf::Shape&, const streamfuse::backends::TensorHandle&, sf::DType,
            const streamfuse::backends::TensorHandle&, sf::DType) override {}
  void to_host(const streamfuse::backends::TensorHandle&, sf::DType, const sf::Shape&,
               void*) override {}
  sf::MemoryStats memory_stats() const override { return {}; }
  void reset_peak_memory_stats() override {}
  void empty_cache() override {}
};

TEST(MatmulKind, IsMadeOnlyForBackendsThatFuseProductEpilogues) {
  const auto has_matmul = [](const streamfuse::backends::Backend& backend) {
    for (const auto& b : streamfuse::fusion::make_builders(backend))
      if (dynamic_cast<const streamfuse::fusion::MatmulBuilder*>(b.get())) return true;
    return false;
  };
  EXPECT_TRUE(has_matmul(streamfuse::runtime::DeviceRuntime::get(sf::Device::cpu()).backend()));
  EXPECT_FALSE(has_matmul(NoEpilogueBackend()));
}

}  // namespace
