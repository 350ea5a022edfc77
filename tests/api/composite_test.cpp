// Ops composed of others (api/composite_ops.cpp) against loops, fusion off and on: masked_fill,
// tril, triu, flip, var, std, and reductions over several axes; and their errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <streamfuse/streamfuse.h>

#include "tests/expect_error.h"
#include "tests/fusion_off_and_on.h"

namespace sf = streamfuse;
using streamfuse::testing::expect_error;

namespace {

class Composite : public streamfuse::testing::FusionOffAndOn {};

TEST_P(Composite, MaskedFillTrilTriuAndFlip) {
  const sf::Tensor x = sf::arange(1, 25, 1, sf::kF32).reshape({2, 3, 4});
  const std::vector<float> xv = x.to_vector<float>();
  for (std::int64_t diagonal = -3; diagonal <= 4; ++diagonal) {
    const std::vector<float> lower = sf::tril(x, diagonal).to_vector<float>();
    const std::vector<float> upper = sf::triu(x, diagonal).to_vector<float>();
    for (int b = 0; b < 2; ++b)
      for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 4; ++c) {
          const std::size_t i = static_cast<std::size_t>((b * 3 + r) * 4 + c);
          EXPECT_EQ(lower[i], c - r <= diagonal ? xv[i] : 0.0f) << "tril " << diagonal;
          EXPECT_EQ(upper[i], c - r >= diagonal ? xv[i] : 0.0f) << "triu " << diagonal;
        }
  }
  // A causal mask as models write it.
  const sf::Tensor causal = sf::tril(sf::ones({3, 3}, sf::kBool));
  EXPECT_EQ(causal.to_vector<bool>(),
            (std::vector<bool>{true, false, false, true, true, false, true, true, true}));
  const sf::Tensor filled = sf::masked_fill(x, x > 20.0f, -1.0f);
  const std::vector<float> fv = filled.to_vector<float>();
  for (std::size_t i = 0; i < xv.size(); ++i) EXPECT_EQ(fv[i], xv[i] > 20 ? -1.0f : xv[i]);
  // A mask that broadcasts: one row per [3, 4] matrix.
  const sf::Tensor row_mask = sf::from_vector(std::vector<bool>{true, false, false, true}, {4});
  EXPECT_EQ(sf::masked_fill(x, row_mask, 0).to_vector<float>()[5], 6.0f);
  EXPECT_EQ(sf::masked_fill(x, row_mask, 0).to_vector<float>()[4], 0.0f);

  const std::vector<float> flipped = sf::flip(x, 1).to_vector<float>();
  for (int b = 0; b < 2; ++b)
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 4; ++c)
        EXPECT_EQ(flipped[static_cast<std::size_t>((b * 3 + r) * 4 + c)],
                  xv[static_cast<std::size_t>((b * 3 + 2 - r) * 4 + c)]);
  EXPECT_EQ(sf::flip(x, -1).to_vector<float>()[0], 4.0f);
}

TEST_P(Composite, VarAndStdAgainstALoopInDouble) {
  std::mt19937 rng(17);
  const sf::Tensor x = sf::randn({5, 7, 3}) * 3.0f + 1.0f;
  const std::vector<float> xv = x.to_vector<float>();
  for (const double correction : {0.0, 1.0}) {
    // Along the middle axis.
    const std::vector<float> v = sf::var(x, 1, false, correction).to_vector<float>();
    const std::vector<float> s = sf::std(x, -2, true, correction).to_vector<float>();
    ASSERT_EQ(sf::std(x, 1, true, correction).shape(), sf::Shape({5, 1, 3}));
    for (int a = 0; a < 5; ++a)
      for (int c = 0; c < 3; ++c) {
        double mean = 0, ss = 0;
        for (int b = 0; b < 7; ++b) mean += xv[static_cast<std::size_t>((a * 7 + b) * 3 + c)];
        mean /= 7;
        for (int b = 0; b < 7; ++b) {
          const double d = xv[static_cast<std::size_t>((a * 7 + b) * 3 + c)] - mean;
          ss += d * d;
        }
        const double want = ss / (7 - correction);
        EXPECT_NEAR(v[static_cast<std::size_t>(a * 3 + c)], want, 1e-5 * want);
        EXPECT_NEAR(s[static_cast<std::size_t>(a * 3 + c)], std::sqrt(want),
                    1e-5 * std::sqrt(want));
      }
    // Over everything.
    double mean = 0, ss = 0;
    for (float f : xv) mean += f;
    mean /= static_cast<double>(xv.size());
    for (float f : xv) ss += (f - mean) * (f - mean);
    const double want = ss / (static_cast<double>(xv.size()) - correction);
    EXPECT_NEAR(sf::var(x, correction).item<float>(), want, 1e-5 * want);
  }
  // Integers compute in f32.
  const sf::Tensor ints = sf::from_vector(std::vector<std::int32_t>{1, 2, 3, 4});
  EXPECT_EQ(sf::var(ints).dtype(), sf::kF32);
  EXPECT_NEAR(sf::var(ints).item<float>(), 5.0 / 3.0, 1e-6);
  (void)rng;
}

TEST_P(Composite, ReductionsOverSeveralAxes) {
  const sf::Tensor x = sf::randn({3, 4, 5, 2});
  const std::vector<float> xv = x.to_vector<float>();
  const sf::Tensor s = sf::sum(x, {3, 1});
  ASSERT_EQ(s.shape(), sf::Shape({3, 5}));
  const sf::Tensor m = sf::max(x, {1, -1}, true);
  ASSERT_EQ(m.shape(), sf::Shape({3, 1, 5, 1}));
  const std::vector<float> sv = s.to_vector<float>(), mv = m.to_vector<float>();
  for (int a = 0; a < 3; ++a)
    for (int c = 0; c < 5; ++c) {
      double total = 0;
      float top = -INFINITY;
      for (int b = 0; b < 4; ++b)
        for (int d = 0; d < 2; ++d) {
          const float v = xv[static_cast<std::size_t>(((a * 4 + b) * 5 + c) * 2 + d)];
          total += v;
          top = std::max(top, v);
        }
      EXPECT_NEAR(sv[static_cast<std::size_t>(a * 5 + c)], total, 1e-5);
      EXPECT_EQ(mv[static_cast<std::size_t>(a * 5 + c)], top);
    }
  EXPECT_NEAR(sf::mean(x, {0, 1, 2, 3}).item<float>(), sf::mean(x).item<float>(), 1e-6);
  EXPECT_EQ(sf::min(x, {2}).to_vector<float>(), sf::min(x, 2).to_vector<float>());
  EXPECT_EQ(sf::sum(x, std::vector<int>{}).shape(), x.shape());
}

STREAMFUSE_FUSION_OFF_AND_ON(Composite);

TEST(CompositeErrors, NameTheFunction) {
  const sf::Tensor x = sf::ones({2, 3});
  expect_error<sf::DTypeError>([&] { return sf::masked_fill(x, x, 0); }, {"masked_fill", "bool"});
  expect_error<sf::ShapeError>(
      [&] {
        return sf::masked_fill(x, sf::ones({4, 2, 3}, sf::kBool), 0);
      },
      {"masked_fill", "x's shape"});
  expect_error<sf::ShapeError>([&] { return sf::tril(sf::ones({3})); }, {"tril", "two dimensions"});
  expect_error<sf::ShapeError>([&] { return sf::flip(x, 2); }, {"flip", "axis"});
  expect_error<sf::DTypeError>([&] { return sf::var(x > 0.0f); }, {"var", "bool"});
  expect_error<sf::ShapeError>([&] { return sf::sum(x, {1, -1}); }, {"sum", "twice"});
  expect_error<sf::ShapeError>([&] { return sf::std(x, 5); }, {"std", "axis"});
}

}  // namespace
