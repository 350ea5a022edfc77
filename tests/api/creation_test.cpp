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

// Large zeros come from fresh pages that are not written (the CPU allocator's zeroed blocks);
// a block the cache hands out again held other values and must still read as zeros. Every
// dtype, and -0.0, which is not all-zero bits, and f16 / bf16 / i8 whose zero has fewer bytes.
TEST(CreationTest, LargeZerosReadAsZerosFreshOrReused) {
  const sf::Shape big{3, 1024, 1024};  // 12 MiB of f32: above the allocator's mmap threshold
  for (int round = 0; round < 2; ++round) {
    for (sf::DType dt : {sf::kF32, sf::kF16, sf::kBF16, sf::kI32, sf::kI64, sf::kI8, sf::kU8,
                         sf::kBool, sf::kF64}) {
      {
        sf::Tensor ones = sf::ones(big, dt);  // leaves a block of ones in the cache
        sf::synchronize();
      }
      const std::int64_t hits = sf::memory_stats().cache_hits;
      const sf::Tensor z = sf::zeros(big, dt);
      sf::synchronize();  // made on its own (not folded into the reads below as a constant)
      if (round == 1) {
        EXPECT_GT(sf::memory_stats().cache_hits, hits) << "the block was not reused";
      }
      EXPECT_EQ(sf::sum(z.to(sf::kF64)).item<double>(), 0.0) << sf::dtype_name(dt);
      EXPECT_EQ(sf::max(z.to(sf::kF64)).item<double>(), 0.0) << sf::dtype_name(dt);
    }
    const sf::Tensor neg = sf::full(big, -0.0f);
    EXPECT_TRUE(std::signbit(neg.reshape({-1}).slice(0, 12345, 12346).item<float>()));
    // Written after it was made lazily: the rest still reads 0.
    sf::Tensor cache = sf::zeros({12, 1024, 64});
    cache = sf::slice_update(std::move(cache), 1, 5, sf::ones({12, 1, 64}));
    EXPECT_EQ(sf::sum(cache).item<float>(), 12.0f * 64.0f);
  }
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
