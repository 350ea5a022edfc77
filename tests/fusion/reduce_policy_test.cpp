// The policy with both builders competing (element-wise and reduce): which plan the explorer
// keeps for the segments models are made of, read from STREAMFUSE_LOG=fusion's "explored plan"
// lines (a plan's op kinds and its kind).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/log.h"
#include "streamfuse/streamfuse.h"
#include "tests/own_cache_dir.h"

namespace sf = streamfuse;
using sf::Tensor;

namespace {

// The plans' "N ops (kinds) -> kind: ..." parts, explored or matched (an earlier test may have
// explored them), while `body` runs (fusion on,
// interpreted: nothing waits for a compiler); what it returns is held until it synchronized, as
// a model holds its results.
template <class F>
std::vector<std::string> explored(F&& body) {
  const sf::Config saved = sf::config();
  sf::Config c = saved;
  c.fusion = true;
  c.jit = sf::JitMode::kInterpret;
  sf::set_config(c);
  sf::core::set_log_mask(sf::core::parse_log_channels("fusion"));
  ::testing::internal::CaptureStderr();
  {
    const std::vector<Tensor> held = body();
    sf::synchronize();
  }
  const std::string out = ::testing::internal::GetCapturedStderr();
  sf::core::set_log_mask(0);
  sf::set_config(saved);
  std::vector<std::string> plans;
  for (std::size_t at = 0, nl; (nl = out.find('\n', at)) != std::string::npos; at = nl + 1) {
    const std::string line = out.substr(at, nl - at);
    std::size_t p = line.find("explored plan: ");
    if (p == std::string::npos) p = line.find("matched plan: ");
    if (p == std::string::npos) continue;
    const std::string plan = line.substr(line.find(": ", p) + 2);
    if (plan.find("(drop)") == std::string::npos)
      plans.push_back(plan.substr(0, plan.find("; first")));
  }
  return plans;
}

bool has(const std::vector<std::string>& plans, const std::string& part) {
  return std::any_of(plans.begin(), plans.end(),
                     [&](const std::string& p) { return p.find(part) != std::string::npos; });
}

std::string all(const std::vector<std::string>& plans) {
  std::string s;
  for (const std::string& p : plans) s += p + "\n";
  return s;
}

Tensor input(sf::Shape shape) {
  Tensor x = sf::randn(shape);
  sf::synchronize();
  return x;
}

TEST(ReducePolicyTest, SoftmaxIsOneReducePlan) {
  const Tensor x = input({16, 64});
  const auto plans = explored([&] { return std::vector<Tensor>{sf::nn::softmax(x, -1)}; });
  EXPECT_TRUE(has(plans,
                  "(max, sub, exp, sum, recip, mul) -> reduce: 1 kernel, 2 stage(s) (max sum) "
                  "over axis 1"))
      << all(plans);
}

TEST(ReducePolicyTest, ElementWiseChainsStayElementWise) {
  const Tensor x = input({16, 64});
  const auto plans = explored([&] { return std::vector<Tensor>{sf::exp(x * 2.0f + 1.0f)}; });
  EXPECT_TRUE(has(plans, "(mul, add, exp) -> elementwise")) << all(plans);
  EXPECT_FALSE(has(plans, "-> reduce")) << all(plans);
}

TEST(ReducePolicyTest, ALoneReductionRunsAsItIs) {
  const Tensor x = input({16, 64});
  const auto plans = explored([&] { return std::vector<Tensor>{sf::sum(x, -1)}; });
  EXPECT_TRUE(has(plans, "1 op (sum) -> operations")) << all(plans);
}

TEST(ReducePolicyTest, AReductionAfterElementWiseOpsTakesThem) {
  const Tensor x = input({16, 64}), w = input({64, 8});
  const auto plans = explored([&] {
    const Tensor s = sf::sum(x * x, -1, true);
    return std::vector<Tensor>{sf::matmul(x / s, w)};
  });
  EXPECT_TRUE(has(plans, "(mul, sum, div) -> reduce")) << all(plans);
}

// Attention scores as users mask them: the comparison, the constant and the where fuse into the
// softmax's kernel.
TEST(ReducePolicyTest, AMaskedSoftmaxIsOneKernel) {
  const Tensor s = input({16, 16});
  const auto plans = explored([&] {
    const Tensor mask = sf::unsqueeze(sf::arange(16), 1) < sf::unsqueeze(sf::arange(16), 0);
    return std::vector<Tensor>{sf::nn::softmax(sf::where(mask, -INFINITY, s), -1)};
  });
  EXPECT_TRUE(has(plans, "(lt, full, where, max, sub, exp, sum, recip, mul; 2 drops) -> reduce"))
      << all(plans);
}

// Attention as users write it: q @ kᵀ stores the scores alone, and the scale, the mask and the
// softmax are one kernel, in any layout of q and k (oneDNN applies a product's steps as it
// stores it only in some: the reduce kernel takes them wherever they save as many bytes). The
// residual add after the output projection stays with the product: the layer norm after it
// reads the sum, which is kept, so the product storing it saves a pass.
TEST(ReducePolicyTest, AttentionScoresScaleAndMaskFuseIntoTheSoftmax) {
  const Tensor q = input({2, 4, 16, 8}), k = input({2, 4, 16, 8});
  const Tensor x = input({2, 16, 32}), w = input({32, 32}), b = input({32});
  auto attention = [&] {
    const Tensor mask = sf::unsqueeze(sf::arange(16), 1) >= sf::unsqueeze(sf::arange(16), 0);
    sf::synchronize();
    const Tensor scores = sf::matmul(q, sf::transpose(k, -2, -1)) * 0.35355339f;
    return sf::nn::softmax(sf::where(mask, scores, -INFINITY), -1);
  };
  const auto plans = explored([&] { return std::vector<Tensor>{attention()}; });
  EXPECT_TRUE(has(plans, "1 op (matmul) -> operations")) << all(plans);
  EXPECT_TRUE(has(plans, "(mul, full, where, max, sub, exp, sum, recip, mul; 3 drops) -> reduce"))
      << all(plans);
  const auto residual = explored([&] {
    const Tensor sum = sf::matmul(x, w) + b + x;
    return std::vector<Tensor>{sum, sf::nn::layer_norm(sum, {32}, b, b)};
  });
  EXPECT_TRUE(has(residual, "(matmul, add x2) -> matmul")) << all(residual);
}

// layer_norm then softmax over the same axis: one kernel of four stages (mean, variance, max,
// sum), each reading the values the one before it made.
TEST(ReducePolicyTest, ChainsOfReductionsOverOneAxisAreOneKernel) {
  const Tensor x = input({16, 64});
  const auto plans = explored(
      [&] { return std::vector<Tensor>{sf::nn::softmax(sf::nn::layer_norm(x, {64}), -1)}; });
  EXPECT_TRUE(has(plans, "-> reduce: 1 kernel, 4 stage(s) (mean mean max sum) over axis 1"))
      << all(plans);
}

// A reduction over another axis ends the kernel (which takes the element-wise op before it): the
// next segment starts with it.
TEST(ReducePolicyTest, AnotherAxisEndsTheKernel) {
  const Tensor x = input({16, 64});
  const auto plans = explored([&] {
    const Tensor y = sf::nn::softmax(x, -1);
    return std::vector<Tensor>{y, sf::sum(y * 2.0f, 0)};
  });
  EXPECT_TRUE(has(plans, "(max, sub, exp, sum, recip, mul x2) -> reduce: 1 kernel, 2 stage(s)"))
      << all(plans);
  EXPECT_TRUE(has(plans, "1 op (sum) -> operations")) << all(plans);
}

// Along an inner axis (dimensions of more than one element after it) the chain is one kernel
// too: it walks the rows by column tiles (jit/reduce_layout.h).
TEST(ReducePolicyTest, InnerAxesAreOneKernelToo) {
  const Tensor x = input({16, 64, 8});
  const auto plans = explored([&] { return std::vector<Tensor>{sf::nn::softmax(x * 2.0f, 1)}; });
  EXPECT_TRUE(
      has(plans, "(mul, max, sub, exp, sum, recip, mul; 1 drop) -> reduce: 1 kernel, 2 stage(s)"))
      << all(plans);
}

// A plan is matched at every size of its relative form, which does not tell an empty dimension
// from others: explored on an empty tensor first (a model's empty batch), the chain must still be
// one kernel, as it is for the sizes that come next.
TEST(ReducePolicyTest, APlanExploredOnEmptyTensorsFusesAtEverySize) {
  const auto chain = [](const Tensor& x) {
    const Tensor y = x * 0.25f;
    return std::vector<Tensor>{sf::sum(y * y, -1), sf::mean(y, -1, true) - 1.0f};
  };
  const Tensor empty = sf::zeros({0, 5});  // no rows: every value of the chain is empty
  const auto first = explored([&] { return chain(empty); });
  EXPECT_TRUE(has(first, "-> reduce")) << all(first);
  const Tensor x = input({24, 40});
  const auto then = explored([&] { return chain(x); });
  EXPECT_TRUE(has(then, "-> reduce")) << all(then);
}

}  // namespace
