// Movement ops: values and shapes, views versus copies, and value semantics through views.
#include <gtest/gtest.h>

#include <numeric>

#include "tests/reference.h"

namespace sf = streamfuse;
using namespace streamfuse::testing;

namespace {

std::vector<float> iota(std::size_t n) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), 0.0f);
  return v;
}

TEST(MovementTest, ReshapeInfersAndKeepsOrder) {
  const sf::Tensor x = sf::from_vector(iota(24), {2, 3, 4});
  const sf::Tensor r = x.reshape({4, -1});
  EXPECT_EQ(r.shape(), (sf::Shape{4, 6}));
  EXPECT_EQ(r.to_vector<float>(), iota(24));
  EXPECT_EQ(sf::flatten(x).shape(), (sf::Shape{24}));
  EXPECT_EQ(sf::ones({1, 1}).reshape({}).rank(), 0);
}

TEST(MovementTest, ReshapeOfNonViewableLayoutCopies) {
  const sf::Tensor x = sf::from_vector(iota(6), {2, 3});
  const sf::Tensor t = x.transpose(0, 1).reshape({6});  // needs a copy: [0, 3, 1, 4, 2, 5]
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

TEST(MovementTest, PermuteAndTranspose) {
  const sf::Tensor x = sf::from_vector(iota(24), {2, 3, 4});
  const sf::Tensor p = x.permute({2, 0, 1});
  EXPECT_EQ(p.shape(), (sf::Shape{4, 2, 3}));
  const std::vector<float> v = p.to_vector<float>();
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k) EXPECT_EQ(v[(i * 2 + j) * 3 + k], (j * 3 + k) * 4 + i);
  EXPECT_EQ(x.transpose(-1, 0).shape(), (sf::Shape{4, 3, 2}));
  EXPECT_EQ(x.permute({-3, -2, -1}).to_vector<float>(), iota(24)) << "identity";
}

TEST(MovementTest, ExpandBroadcastsWithoutCopying) {
  const sf::Tensor x = sf::from_vector(std::vector<float>{1, 2, 3}, {3, 1});
  const sf::Tensor e = x.expand({2, 3, 4});
  EXPECT_EQ(e.shape(), (sf::Shape{2, 3, 4}));
  const std::vector<float> v = e.to_vector<float>();
  for (int i = 0; i < 24; ++i) EXPECT_EQ(v[i], 1 + (i / 4) % 3);
  EXPECT_EQ(x.expand({-1, 5}).shape(), (sf::Shape{3, 5}));
  sf::synchronize();
  const std::int64_t before = sf::memory_stats().bytes_in_use;
  const sf::Tensor big = x.expand({3, 1 << 20});
  sf::synchronize();
  EXPECT_EQ(sf::memory_stats().bytes_in_use, before) << "expand is a view";
  EXPECT_EQ(sf::sum(big).item<float>(), 6.0f * (1 << 20));
}

TEST(MovementTest, SliceWithStepsAndNegativeBounds) {
  const sf::Tensor x = sf::from_vector(iota(10));
  EXPECT_EQ(x.slice(0, 2, 8, 3).to_vector<float>(), (std::vector<float>{2, 5}));
  EXPECT_EQ(x.slice(0, -3, 10).to_vector<float>(), (std::vector<float>{7, 8, 9}));
  EXPECT_EQ(x.slice(0, 5, 5).numel(), 0);
  EXPECT_EQ(x.slice(0, 7, 2).numel(), 0) << "start after stop is empty, as in Python";
  const sf::Tensor m = sf::from_vector(iota(12), {3, 4});
  EXPECT_EQ(m.slice(1, 1, 3).to_vector<float>(), (std::vector<float>{1, 2, 5, 6, 9, 10}));
  EXPECT_EQ(m.slice(0, 1, 3).slice(1, 0, 4, 2).to_vector<float>(),
            (std::vector<float>{4, 6, 8, 10}));
}

TEST(MovementTest, CatAlongAnyAxisWithPromotion) {
  const sf::Tensor a = sf::from_vector(iota(6), {2, 3});
  const sf::Tensor b = sf::from_vector(std::vector<std::int32_t>{10, 11}, {2, 1});
  const sf::Tensor c = sf::cat({a, b}, 1);
  EXPECT_EQ(c.dtype(), sf::kF32);
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{0, 1, 2, 10, 3, 4, 5, 11}));
  const sf::Tensor d = sf::cat({a, a.slice(0, 0, 1)}, 0);
  EXPECT_EQ(d.shape(), (sf::Shape{3, 3}));
  EXPECT_EQ(d.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5, 0, 1, 2}));
  const sf::Tensor t = sf::cat({a.transpose(0, 1), a.transpose(0, 1)}, -1);  // strided inputs
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{0, 3, 0, 3, 1, 4, 1, 4, 2, 5, 2, 5}));
  const std::vector<sf::Tensor> many(5, sf::ones({1}));
  EXPECT_EQ(sf::cat(many).to_vector<float>(), std::vector<float>(5, 1.0f));
}

TEST(MovementTest, ContiguousSqueezeUnsqueeze) {
  const sf::Tensor x = sf::from_vector(iota(6), {2, 3});
  EXPECT_EQ(x.transpose(0, 1).contiguous().to_vector<float>(),
            (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(sf::unsqueeze(x, 1).shape(), (sf::Shape{2, 1, 3}));
  EXPECT_EQ(sf::unsqueeze(x, -1).shape(), (sf::Shape{2, 3, 1}));
  EXPECT_EQ(sf::squeeze(sf::unsqueeze(x, 0), 0).shape(), (sf::Shape{2, 3}));
}

TEST(MovementTest, ViewsNeverSeeLaterInPlaceReuse) {
  // `v` shares x's memory; x's last handle is then moved into an op that could reuse memory.
  sf::Tensor x = sf::from_vector(iota(8));
  const sf::Tensor v = x.reshape({2, 4});
  const sf::Tensor y = std::move(x) + 100.0f;
  EXPECT_EQ(v.to_vector<float>(), iota(8));
  EXPECT_EQ(y.to_vector<float>()[0], 100.0f);
  sf::Tensor a = sf::from_vector(iota(4));
  const sf::Tensor copy = a;
  const sf::Tensor b = std::move(a) * 2.0f;  // `copy` still holds the value: no reuse
  EXPECT_EQ(copy.to_vector<float>(), iota(4));
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{0, 2, 4, 6}));
}

TEST(MovementTest, ZeroSizedTensors) {
  const sf::Tensor e = sf::zeros({0, 3});
  EXPECT_EQ(e.reshape({3, 0}).shape(), (sf::Shape{3, 0}));
  EXPECT_EQ(e.transpose(0, 1).contiguous().numel(), 0);
  EXPECT_EQ(sf::cat({e, sf::ones({2, 3})}).to_vector<float>(), std::vector<float>(6, 1.0f));
  EXPECT_TRUE((e + 1).to_vector<float>().empty());
}

}  // namespace
