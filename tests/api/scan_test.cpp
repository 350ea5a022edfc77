// cumsum, argsort, sort and topk against loops and std::stable_sort, fusion off and on: every
// dtype, axes inner and outer, NaN, signed zeros and ties; and their errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include <streamfuse/streamfuse.h>

#include "tests/expect_error.h"
#include "tests/fusion_off_and_on.h"

namespace sf = streamfuse;
using streamfuse::testing::expect_error;

namespace {

class Scans : public streamfuse::testing::FusionOffAndOn {};

TEST_P(Scans, CumsumAccumulatesInDoubleAndRoundsEachPrefix) {
  const sf::Tensor x = sf::randn({4, 300, 3}) * 100.0f;
  const std::vector<float> xv = x.to_vector<float>();
  const std::vector<float> got = sf::cumsum(x, 1).to_vector<float>();
  for (int a = 0; a < 4; ++a)
    for (int c = 0; c < 3; ++c) {
      double acc = 0;
      for (int k = 0; k < 300; ++k) {
        const std::size_t i = static_cast<std::size_t>((a * 300 + k) * 3 + c);
        acc += xv[i];
        ASSERT_EQ(got[i], static_cast<float>(acc)) << a << ", " << k << ", " << c;
      }
    }
  // f16: prefixes rounded to f16 from the double sum.
  const sf::Tensor h = (sf::randn({50}) * 4.0f).to(sf::kF16);
  const std::vector<float> hv = h.to(sf::kF32).to_vector<float>();
  const std::vector<float> hs = sf::cumsum(h, 0).to(sf::kF32).to_vector<float>();
  double acc = 0;
  for (std::size_t k = 0; k < hv.size(); ++k) {
    acc += hv[k];
    EXPECT_EQ(
        hs[k],
        sf::Tensor(sf::full({}, static_cast<float>(acc)).to(sf::kF16)).to(sf::kF32).item<float>());
  }
  // Integers and bool sum in i64, wrapping.
  const sf::Tensor ints = sf::from_vector(std::vector<std::int32_t>{2147483647, 1, -5});
  EXPECT_EQ(sf::cumsum(ints, 0).dtype(), sf::kI64);
  EXPECT_EQ(sf::cumsum(ints, 0).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{2147483647, 2147483648LL, 2147483643LL}));
  EXPECT_EQ(sf::cumsum(sf::from_vector(std::vector<bool>{true, false, true}), -1)
                .to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{1, 1, 2}));
}

TEST_P(Scans, ArgsortIsAStableSortWithNanLast) {
  const std::vector<float> v = {3, NAN, -0.0f, 1, 0.0f, 3, -INFINITY, NAN, 1, 2};
  const sf::Tensor x = sf::from_vector(v, {2, 5});
  for (const bool descending : {false, true}) {
    const std::vector<std::int64_t> got = sf::argsort(x, 1, descending).to_vector<std::int64_t>();
    for (int r = 0; r < 2; ++r) {
      std::vector<std::int64_t> want(5);
      std::iota(want.begin(), want.end(), 0);
      const auto key = [&](std::int64_t k) { return v[static_cast<std::size_t>(r * 5 + k)]; };
      const auto before = [](float a, float b) {
        return !std::isnan(a) && (std::isnan(b) || a < b);
      };
      std::stable_sort(want.begin(), want.end(), [&](std::int64_t a, std::int64_t b) {
        return descending ? before(key(b), key(a)) : before(key(a), key(b));
      });
      for (int k = 0; k < 5; ++k) EXPECT_EQ(got[static_cast<std::size_t>(r * 5 + k)], want[k]);
    }
  }
  // Along an outer axis, integers, many equal keys.
  const sf::Tensor ints = sf::from_vector(std::vector<std::int64_t>{5, 1, 5, 1, 0, 9}, {3, 2});
  EXPECT_EQ(sf::argsort(ints, 0).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{2, 0, 0, 1, 1, 2}));
  const sf::Sorted s = sf::sort(ints, 0, true);
  EXPECT_EQ(s.values.to_vector<std::int64_t>(), (std::vector<std::int64_t>{5, 9, 5, 1, 0, 1}));
  EXPECT_EQ(s.indices.to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 2, 1, 0, 2, 1}));
}

TEST_P(Scans, TopkOfALongRow) {
  const sf::Tensor logits = sf::randn({3, 5000});
  const std::vector<float> lv = logits.to_vector<float>();
  const sf::Sorted top = sf::topk(logits, 7);
  ASSERT_EQ(top.values.shape(), sf::Shape({3, 7}));
  const std::vector<float> tv = top.values.to_vector<float>();
  const std::vector<std::int64_t> ti = top.indices.to_vector<std::int64_t>();
  for (int r = 0; r < 3; ++r) {
    std::vector<float> row(lv.begin() + r * 5000, lv.begin() + (r + 1) * 5000);
    std::vector<float> sorted = row;
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    for (int k = 0; k < 7; ++k) {
      EXPECT_EQ(tv[static_cast<std::size_t>(r * 7 + k)], sorted[static_cast<std::size_t>(k)]);
      EXPECT_EQ(row[static_cast<std::size_t>(ti[static_cast<std::size_t>(r * 7 + k)])],
                sorted[static_cast<std::size_t>(k)]);
    }
  }
  EXPECT_EQ(sf::topk(logits, 2, -1, false).values.to_vector<float>()[0],
            *std::min_element(lv.begin(), lv.begin() + 5000));
  EXPECT_EQ(sf::topk(logits, 0).values.shape(), sf::Shape({3, 0}));
}

STREAMFUSE_FUSION_OFF_AND_ON(Scans);

TEST(ScanErrors, AtTheCall) {
  const sf::Tensor x = sf::ones({2, 3});
  expect_error<sf::ShapeError>([&] { return sf::cumsum(x, 2); }, {"cumsum", "axis"});
  expect_error<sf::ShapeError>([&] { return sf::argsort(x, -3); }, {"argsort", "axis"});
  expect_error<sf::ShapeError>([&] { return sf::topk(x, 4).values; }, {"topk", "k = 4", "[0, 3]"});
  expect_error<sf::ShapeError>([&] { return sf::topk(sf::full({}, 1.0f), 1).values; },
                               {"topk", "no axis"});
  expect_error<sf::Error>([&] { return sf::cumsum(sf::Tensor(), 0); }, {"cumsum"});
  EXPECT_EQ(sf::cumsum(sf::full({}, 2.0f), 0).item<float>(), 2.0f);
  EXPECT_EQ(sf::argsort(sf::zeros({0, 4})).shape(), sf::Shape({0, 4}));
}

}  // namespace
