// matmul through the API: NumPy shape rules, promotion and values against a naive product.
#include <gtest/gtest.h>

#include <random>

#include "tests/reference.h"

namespace sf = streamfuse;
using namespace streamfuse::testing;

namespace {

TEST(MatmulOpTest, ShapesFollowNumPy) {
  EXPECT_EQ(sf::matmul(sf::ones({3}), sf::ones({3})).shape(), (sf::Shape{}));
  EXPECT_EQ(sf::matmul(sf::ones({3}), sf::ones({3, 4})).shape(), (sf::Shape{4}));
  EXPECT_EQ(sf::matmul(sf::ones({2, 3}), sf::ones({3})).shape(), (sf::Shape{2}));
  EXPECT_EQ(sf::matmul(sf::ones({5, 1, 2, 3}), sf::ones({4, 3, 6})).shape(),
            (sf::Shape{5, 4, 2, 6}));
  EXPECT_EQ(sf::matmul(sf::ones({3}), sf::ones({7, 3, 2})).shape(), (sf::Shape{7, 2}));
}

TEST(MatmulOpTest, ValuesAgainstNaiveProduct) {
  std::mt19937_64 rng(9);
  const std::vector<double> a = random_values(2 * 5 * 7, kF32, -1, 1, rng);
  const std::vector<double> b = random_values(7 * 3, kF32, -1, 1, rng);
  const sf::Tensor c = sf::matmul(tensor_of(a, {2, 5, 7}, kF32), tensor_of(b, {7, 3}, kF32));
  const std::vector<float> got = c.to_vector<float>();
  for (int n = 0; n < 2; ++n)
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 3; ++j) {
        double s = 0;
        for (int k = 0; k < 7; ++k) s += a[(n * 5 + i) * 7 + k] * b[k * 3 + j];
        EXPECT_NEAR(got[(n * 5 + i) * 3 + j], s, 1e-5);
      }
}

TEST(MatmulOpTest, TransposedOperandsAndPromotion) {
  const sf::Tensor a = sf::arange(6).reshape({3, 2});  // i64
  const sf::Tensor b = sf::arange(6).to(sf::kF32).reshape({3, 2});
  const sf::Tensor c = sf::matmul(a.transpose(0, 1), b);  // [2, 3] x [3, 2]
  EXPECT_EQ(c.dtype(), sf::kF32);
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{20, 26, 26, 35}));
  const sf::Tensor i = sf::matmul(a.transpose(0, 1), a);
  EXPECT_EQ(i.dtype(), sf::kI64);
  EXPECT_EQ(i.to_vector<std::int64_t>(), (std::vector<std::int64_t>{20, 26, 26, 35}));
}

TEST(MatmulOpTest, HalfPrecisionAccumulatesInFloat) {
  const sf::Tensor a = sf::full({1, 4096}, 1.0f, sf::kF16);
  const sf::Tensor b = sf::full({4096, 1}, 1.0f, sf::kF16);
  EXPECT_EQ(static_cast<float>(sf::matmul(a, b).item<sf::Half>()), 4096.0f);
  EXPECT_EQ(static_cast<float>(sf::matmul(a.to(sf::kBF16), b.to(sf::kBF16)).item<sf::BFloat16>()),
            4096.0f);
}

TEST(MatmulOpTest, EmptyInnerDimensionGivesZeros) {
  EXPECT_EQ(sf::matmul(sf::ones({2, 0}), sf::ones({0, 3})).to_vector<float>(),
            std::vector<float>(6, 0.0f));
}

}  // namespace
