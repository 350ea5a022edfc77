// scatter and scatter_add against loops, fusion off and on: every axis, an index smaller than
// src and x, repeated positions (the later one along the axis; sums in order), 16-bit floats
// rounded at each step, integers wrapping; value semantics and in place; and their errors.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include <streamfuse/streamfuse.h>

#include "tests/expect_error.h"
#include "tests/fusion_off_and_on.h"

namespace sf = streamfuse;
using streamfuse::testing::expect_error;

namespace {

class Scatters : public streamfuse::testing::FusionOffAndOn {};

// Row-major coordinates of flat position p in `s`.
std::vector<std::int64_t> coords(std::int64_t p, const sf::Shape& s) {
  std::vector<std::int64_t> c(static_cast<std::size_t>(s.rank()));
  for (int d = s.rank() - 1; d >= 0; --d) {
    c[static_cast<std::size_t>(d)] = p % s[d];
    p /= s[d];
  }
  return c;
}
std::int64_t flat(const std::vector<std::int64_t>& c, const sf::Shape& s) {
  std::int64_t p = 0;
  for (int d = 0; d < s.rank(); ++d) p = p * s[d] + c[static_cast<std::size_t>(d)];
  return p;
}

// The reference: index positions in order along the axis per line == row-major order of index
// restricted to one line, so a plain row-major loop gives the same result for every target (a
// target is only ever written from one line).
template <class T, class Op>
std::vector<T> reference(std::vector<T> x, const sf::Shape& xs,
                         const std::vector<std::int64_t>& idx, const sf::Shape& is,
                         const std::vector<T>& src, const sf::Shape& ss, int axis, Op op) {
  for (std::int64_t p = 0; p < is.numel(); ++p) {
    std::vector<std::int64_t> c = coords(p, is);
    const std::int64_t s = flat(c, ss);
    c[static_cast<std::size_t>(axis)] = idx[static_cast<std::size_t>(p)];
    T& to = x[static_cast<std::size_t>(flat(c, xs))];
    to = op(to, src[static_cast<std::size_t>(s)]);
  }
  return x;
}

TEST_P(Scatters, ScatterAndScatterAddMatchALoopOnEveryAxis) {
  const sf::Shape xs{4, 5, 6}, ss{4, 6, 7};
  for (int axis = 0; axis < 3; ++axis) {
    sf::Shape is{3, 4, 5};  // smaller than src everywhere and than x off the axis
    std::vector<std::int64_t> idx(static_cast<std::size_t>(is.numel()));
    for (std::size_t i = 0; i < idx.size(); ++i)
      idx[i] = static_cast<std::int64_t>((i * 7 + 3) % static_cast<std::size_t>(xs[axis]));
    const sf::Tensor x = sf::randn(xs), src = sf::randn(ss);
    const sf::Tensor index = sf::from_vector(idx, is);
    const std::vector<float> xv = x.to_vector<float>(), sv = src.to_vector<float>();
    EXPECT_EQ(sf::scatter(x, axis, index, src).to_vector<float>(),
              reference(xv, xs, idx, is, sv, ss, axis, [](float, float b) { return b; }))
        << "axis " << axis;
    EXPECT_EQ(sf::scatter_add(x, axis, index.to(sf::kI32), src).to_vector<float>(),
              reference(xv, xs, idx, is, sv, ss, axis, [](float a, float b) { return a + b; }))
        << "axis " << axis;
  }
}

TEST_P(Scatters, RepeatedPositionsKeepTheLaterOneAndSumInOrder) {
  // Every element of a column goes to row 0: scatter keeps the last, scatter_add sums them in
  // order (1e8 + 1 + ... : order-sensitive in f32).
  const sf::Tensor src = sf::from_vector(std::vector<float>{1e8f, 1, 1, -1e8f, 5, 6, 7, 8}, {4, 2});
  const sf::Tensor index = sf::zeros({4, 2}, sf::kI64);
  const sf::Tensor x = sf::zeros({2, 2});
  EXPECT_EQ(sf::scatter(x, 0, index, src).to_vector<float>(), (std::vector<float>{7, 8, 0, 0}));
  float a = 0, b = 0;
  for (float v : {1e8f, 1.0f, 5.0f, 7.0f}) a += v;
  for (float v : {1.0f, -1e8f, 6.0f, 8.0f}) b += v;
  EXPECT_EQ(sf::scatter_add(x, 0, index, src).to_vector<float>(), (std::vector<float>{a, b, 0, 0}));
  // bf16 rounds at each step: 256 + 1 + 1 stays 256 (PyTorch's CPU scatter_add does the same).
  const sf::Tensor ones = sf::full({3}, 1.0f, sf::kBF16);
  EXPECT_EQ(sf::scatter_add(sf::full({1}, 256.0f, sf::kBF16), 0, sf::zeros({2}, sf::kI64), ones)
                .to(sf::kF32)
                .item<float>(),
            256.0f);
  // Integers wrap.
  const sf::Tensor big = sf::full({1}, 2147483647, sf::kI32);
  EXPECT_EQ(sf::scatter_add(big, 0, sf::zeros({1}, sf::kI64), sf::full({1}, 1, sf::kI32))
                .item<std::int32_t>(),
            INT32_MIN);
}

TEST_P(Scatters, ScalarValuesAndConvertedSources) {
  const sf::Tensor x = sf::zeros({2, 3}, sf::kI64);
  const sf::Tensor index = sf::from_vector(std::vector<std::int64_t>{2, 0}, {2, 1});
  EXPECT_EQ(sf::scatter(x, 1, index, 9).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{0, 0, 9, 9, 0, 0}));
  // src of another dtype converts to x's (as index_put): 2.7 -> 2.
  EXPECT_EQ(sf::scatter(x, 1, index, sf::full({2, 1}, 2.7f)).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{0, 0, 2, 2, 0, 0}));
}

TEST_P(Scatters, ValueSemanticsAndInPlaceWhenMovedIn) {
  sf::Tensor x = sf::zeros({3, 4});
  const sf::Tensor keep = x;  // a second handle: x's memory must not change
  const sf::Tensor index = sf::from_vector(std::vector<std::int64_t>{1, 2, 0, 2}, {1, 4});
  const sf::Tensor y = sf::scatter(std::move(x), 0, index, sf::ones({1, 4}));
  EXPECT_EQ(keep.sum().item<float>(), 0.0f);
  EXPECT_EQ(y.sum().item<float>(), 4.0f);
  // Moved in as the only handle: the result takes its memory (a loop of scatter_adds into one
  // accumulator allocates no new accumulator per step).
  sf::Tensor acc = sf::zeros({1000, 64});
  const sf::Tensor rows = sf::from_vector(std::vector<std::int64_t>(64, 7), {1, 64});
  acc.to_vector<float>();
  sf::reset_peak_memory_stats(sf::Device::cpu());
  const std::int64_t before = sf::memory_stats(sf::Device::cpu()).bytes_in_use;
  for (int i = 0; i < 20; ++i) acc = sf::scatter_add(std::move(acc), 0, rows, sf::ones({1, 64}));
  EXPECT_EQ(acc.sum().item<float>(), 20.0f * 64);
  EXPECT_LT(sf::memory_stats(sf::Device::cpu()).peak_bytes_in_use - before, 1000 * 64 * 4)
      << "each step copied the accumulator";
}

TEST_P(Scatters, ABroadcastViewMovedInIsCopiedNotWrittenInPlace) {
  // expand's rows share one row of memory that nothing else holds: written in place, every row
  // would change.
  sf::Tensor x = sf::expand(sf::zeros({1, 4}), {3, 4});
  const sf::Tensor index = sf::from_vector(std::vector<std::int64_t>{1}, {1, 1});
  const sf::Tensor y = sf::scatter(std::move(x), 0, index, sf::ones({1, 1}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0}));
  sf::Tensor z = sf::expand(sf::zeros({1, 4}), {3, 4});
  EXPECT_EQ(sf::slice_update(std::move(z), 0, 2, sf::ones({1, 4})).to_vector<float>(),
            (std::vector<float>{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1}));
}

TEST_P(Scatters, BadArgumentsAreErrors) {
  const sf::Tensor x = sf::zeros({3, 4});
  const sf::Tensor bad = sf::from_vector(std::vector<std::int64_t>{0, 5}, {1, 2});
  expect_error<sf::Error>(
      [&] {
        sf::scatter(x, 1, bad, sf::ones({1, 2})).to_vector<float>();
      },
      {"scatter", "index 5 at [0, 1]", "axis 1 of size 4"});
  expect_error<sf::Error>(
      [&] {
        sf::scatter_add(x, 1, bad * -1, sf::ones({1, 2})).to_vector<float>();
      },
      {"scatter_add", "index -5"});
  expect_error<sf::ShapeError>(
      [&] {
        sf::scatter(x, 0, sf::zeros({1, 5}, sf::kI64), sf::ones({1, 5}));
      },
      {"scatter", "nor than x's but along axis 0"});
  expect_error<sf::ShapeError>(
      [&] {
        sf::scatter(x, 0, sf::zeros({2, 3}, sf::kI64), sf::ones({2, 2}));
      },
      {"scatter", "no dimension larger than src's"});
  expect_error<sf::ShapeError>([&] { sf::scatter(x, 0, sf::zeros({2}, sf::kI64), sf::ones({2})); },
                               {"rank"});
  expect_error<sf::DTypeError>(
      [&] {
        sf::scatter(x, 0, sf::zeros({1, 1}), sf::ones({1, 1}));
      },
      {"i32 or i64"});
  expect_error<sf::DTypeError>(
      [&] {
        sf::scatter_add(x.to(sf::kBool), 0, sf::zeros({1, 1}, sf::kI64), sf::ones({1, 1}));
      },
      {"scatter_add", "bool"});
  EXPECT_EQ(x.sum().item<float>(), 0.0f);  // nothing lost
}

STREAMFUSE_FUSION_OFF_AND_ON(Scatters);

}  // namespace
