// Creation ops: host data, constants, ranges, random tensors and the *_like family.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/reference.h"

namespace sf = streamfuse;
using namespace streamfuse::testing;

namespace {

TEST(CreationTest, FromVectorAndFromBlobCopy) {
  std::vector<std::int32_t> data = {1, 2, 3, 4, 5, 6};
  const sf::Tensor t = sf::from_blob(data.data(), {2, 3});
  data[0] = 99;  // the tensor holds a copy
  EXPECT_EQ(t.to_vector<std::int32_t>(), (std::vector<std::int32_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(t.dtype(), sf::kI32);
  EXPECT_EQ(sf::from_vector(std::vector<bool>{true, false}).to_vector<bool>(),
            (std::vector<bool>{true, false}));
  EXPECT_EQ(sf::from_vector(std::vector<sf::Half>{sf::Half(1.5f)}).item<sf::Half>(),
            sf::Half(1.5f));
  EXPECT_THROW(sf::from_vector(std::vector<float>{1, 2, 3}, {2, 2}), sf::ShapeError);
}

TEST(CreationTest, FullZerosOnesWithDtypes) {
  EXPECT_EQ(sf::full({2}, 7).dtype(), sf::kI64);
  EXPECT_EQ(sf::full({2}, 7.5).dtype(), sf::kF32);
  EXPECT_EQ(sf::full({2}, true).dtype(), sf::kBool);
  EXPECT_EQ(sf::full({2}, 7.9, sf::kI32).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{7, 7}));
  EXPECT_EQ(sf::full({2}, 3e9, sf::kI32).to_vector<std::int32_t>()[0], 2147483647) << "saturates";
  EXPECT_EQ(static_cast<float>(sf::full({1}, 0.1, sf::kBF16).item<sf::BFloat16>()),
            static_cast<float>(sf::BFloat16(0.1f)));
  EXPECT_EQ(sf::zeros({2, 2}, sf::kI64).to_vector<std::int64_t>(), std::vector<std::int64_t>(4, 0));
  EXPECT_EQ(sf::ones({3}, sf::kBool).to_vector<bool>(), std::vector<bool>(3, true));
  EXPECT_EQ(sf::full({}, 2.0f).rank(), 0);
  EXPECT_EQ(sf::full({}, 2.0f).item<float>(), 2.0f);
}

TEST(CreationTest, Arange) {
  EXPECT_EQ(sf::arange(5).to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(sf::arange(1, 10, 3).to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 4, 7}));
  EXPECT_EQ(sf::arange(5, 0, -2).to_vector<std::int64_t>(), (std::vector<std::int64_t>{5, 3, 1}));
  EXPECT_EQ(sf::arange(0.0, 1.0, 0.25).to_vector<float>(),
            (std::vector<float>{0, 0.25, 0.5, 0.75}));
  EXPECT_EQ(sf::arange(3, sf::kF16).dtype(), sf::kF16);
  EXPECT_EQ(sf::arange(0, -3).numel(), 0);
  EXPECT_THROW(sf::arange(0, 5, 0), sf::Error);
  EXPECT_THROW(sf::arange(0.0, INFINITY), sf::Error);
}

TEST(CreationTest, RandomIsSeededAndIndependentOfFusionAndThreads) {
  sf::manual_seed(123);
  const std::vector<float> a = sf::randn({1000}).to_vector<float>();
  const std::vector<float> b = sf::rand({1000}).to_vector<float>();
  sf::manual_seed(123);
  const sf::Tensor a2 = sf::randn({1000});
  const sf::Tensor b2 = sf::rand({1000});
  EXPECT_EQ(a2.to_vector<float>(), a);
  EXPECT_EQ(b2.to_vector<float>(), b);
  EXPECT_NE(sf::rand({1000}).to_vector<float>(), b) << "the stream advances";
  // Fusion off and one thread give the same values.
  const sf::Config saved = sf::config();
  sf::Config c = saved;
  c.fusion = false;
  c.num_threads = 1;
  sf::set_config(c);
  sf::manual_seed(123);
  EXPECT_EQ(sf::randn({1000}).to_vector<float>(), a);
  sf::set_config(saved);
}

TEST(CreationTest, RandomDistributions) {
  sf::manual_seed(1);
  const std::int64_t n = 1 << 20;
  const std::vector<float> u = sf::rand({n}).to_vector<float>();
  double sum = 0, sq = 0;
  for (float x : u) {
    ASSERT_GE(x, 0.0f);
    ASSERT_LT(x, 1.0f);
    sum += x;
  }
  EXPECT_NEAR(sum / n, 0.5, 0.002);
  const std::vector<float> g = sf::randn({n}).to_vector<float>();
  sum = 0;
  for (float x : g) {
    ASSERT_TRUE(std::isfinite(x));
    sum += x;
    sq += static_cast<double>(x) * x;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.005);
  EXPECT_NEAR(sq / n, 1.0, 0.005);
  for (sf::DType d : {sf::kF16, sf::kBF16}) {
    for (float x : sf::rand({4096}, d).to(sf::kF32).to_vector<float>()) ASSERT_LT(x, 1.0f);
  }
  EXPECT_THROW(sf::rand({2}, sf::kI32), sf::DTypeError);
}

TEST(CreationTest, LikeFamilyKeepsShapeAndDtype) {
  const sf::Tensor x = sf::ones({2, 3}, sf::kBF16);
  EXPECT_EQ(sf::zeros_like(x).shape(), x.shape());
  EXPECT_EQ(sf::zeros_like(x).dtype(), sf::kBF16);
  EXPECT_EQ(sf::ones_like(x, sf::kI32).dtype(), sf::kI32);
  EXPECT_EQ(sf::full_like(x, 4).to(sf::kF32).to_vector<float>(), std::vector<float>(6, 4.0f));
  EXPECT_EQ(sf::rand_like(x).dtype(), sf::kBF16);
  EXPECT_EQ(sf::randn_like(x, sf::kF32).shape(), x.shape());
}

}  // namespace
