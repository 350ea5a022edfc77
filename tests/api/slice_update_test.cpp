// slice_update: the values of a loop over random shapes, axes, starts and dtypes, fusion off and
// on; value semantics (other handles of x keep their values); in place when x is moved in (a KV
// cache that grows by a row costs no copy of the cache); errors at the call.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <streamfuse/streamfuse.h>

#include "tests/expect_error.h"
#include "tests/fusion_off_and_on.h"

namespace sf = streamfuse;
using streamfuse::testing::expect_error;

namespace {

class SliceUpdate : public streamfuse::testing::FusionOffAndOn {};

TEST_P(SliceUpdate, MatchesALoop) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 80; ++trial) {
    sf::Shape xs;
    const int rank = 1 + static_cast<int>(rng() % 4);
    for (int d = 0; d < rank; ++d) xs.push_back(1 + static_cast<std::int64_t>(rng() % 5));
    const int axis = static_cast<int>(rng() % rank);
    sf::Shape ss = xs;
    ss[axis] = static_cast<std::int64_t>(rng() % (xs[axis] + 1));
    const std::int64_t start = static_cast<std::int64_t>(rng() % (xs[axis] - ss[axis] + 1));
    SCOPED_TRACE("x " + xs.to_string() + " axis " + std::to_string(axis) + " src " +
                 ss.to_string() + " from " + std::to_string(start));
    const sf::Tensor x = sf::randn(xs);
    // src of another dtype, converted; sometimes a transposed view.
    sf::Tensor src = sf::randn(ss).to(sf::kF16);
    if (trial % 3 == 0 && rank >= 2) {
      sf::Shape swapped = ss;
      std::swap(swapped[0], swapped[rank - 1]);
      src = sf::transpose(sf::randn(swapped).to(sf::kF16), 0, rank - 1);
    }
    const std::vector<float> xv = x.to_vector<float>();
    const std::vector<float> sv = src.to(sf::kF32).to_vector<float>();
    // Half of the trials move a copy of the handle in (the in-place path), half keep it.
    sf::Tensor copy = x;
    const bool moved = trial % 2 == 0;
    const sf::Tensor out = moved ? sf::slice_update(std::move(copy), axis,
                                                    start - (trial % 4 == 0 ? xs[axis] : 0), src)
                                 : sf::slice_update(copy, axis, start, src);
    ASSERT_EQ(out.shape(), xs);
    ASSERT_EQ(out.dtype(), sf::kF32);

    std::vector<float> want = xv;
    std::int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= xs[d];
    for (int d = axis + 1; d < rank; ++d) inner *= xs[d];
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t j = 0; j < ss[axis]; ++j)
        for (std::int64_t i = 0; i < inner; ++i)
          want[static_cast<std::size_t>((o * xs[axis] + start + j) * inner + i)] =
              sv[static_cast<std::size_t>((o * ss[axis] + j) * inner + i)];
    EXPECT_EQ(out.to_vector<float>(), want);
    EXPECT_EQ(x.to_vector<float>(), xv) << "x changed";
    if (!moved) {
      EXPECT_EQ(copy.to_vector<float>(), xv) << "the kept handle changed";
    }
  }
}

// A KV cache written as users write one: each step moves the cache in and gets it back with one
// more row. Only the rows are written: the cache is never copied (peak memory grows by far less
// than one cache), and the values are those of the steps.
TEST_P(SliceUpdate, AMovedCacheIsUpdatedInPlace) {
  const std::int64_t heads = 4, steps = 64, dim = 32;
  sf::Tensor kv = sf::zeros({heads, steps, dim});
  sf::synchronize();
  sf::reset_peak_memory_stats();
  const std::int64_t before = sf::memory_stats().bytes_in_use;
  for (std::int64_t t = 0; t < steps; ++t) {
    const sf::Tensor row = sf::full({heads, 1, dim}, static_cast<float>(t));
    kv = sf::slice_update(std::move(kv), 1, t, row * 1.0f);
  }
  sf::synchronize();
  const std::int64_t cache_bytes = heads * steps * dim * 4;
  EXPECT_LT(sf::memory_stats().peak_bytes_in_use - before, cache_bytes / 4);
  const std::vector<float> v = kv.to_vector<float>();
  for (std::int64_t h = 0; h < heads; ++h)
    for (std::int64_t t = 0; t < steps; ++t)
      ASSERT_EQ(v[static_cast<std::size_t>((h * steps + t) * dim + 5)], static_cast<float>(t));
}

TEST_P(SliceUpdate, IndexPutReplacesTheIndexedSlicesLastOneWinning) {
  const sf::Tensor x = sf::arange(0, 24, 1, sf::kF32).reshape({2, 4, 3});
  const sf::Tensor idx = sf::from_vector(std::vector<std::int32_t>{3, 0, 3});
  const sf::Tensor src =
      sf::full({2, 3, 3}, 0.0f) + sf::from_vector(std::vector<float>{100, 200, 300}, {1, 3, 1});
  const std::vector<float> xv = x.to_vector<float>();
  for (const bool moved : {false, true}) {
    sf::Tensor copy = x;
    const sf::Tensor out = moved ? sf::index_put(std::move(copy), 1, idx, src.to(sf::kF16))
                                 : sf::index_put(copy, 1, idx, src);
    std::vector<float> want = xv;
    for (int a = 0; a < 2; ++a)
      for (int c = 0; c < 3; ++c) {
        want[static_cast<std::size_t>((a * 4 + 0) * 3 + c)] = 200;
        want[static_cast<std::size_t>((a * 4 + 3) * 3 + c)] = 300;  // index 3 twice: the last
      }
    EXPECT_EQ(out.to_vector<float>(), want);
    EXPECT_EQ(x.to_vector<float>(), xv);
  }
  // Moved in: the cache-sized tensor is written in place.
  sf::Tensor table = sf::zeros({512, 64});
  sf::synchronize();
  sf::reset_peak_memory_stats();
  const std::int64_t before = sf::memory_stats().bytes_in_use;
  for (int i = 0; i < 16; ++i)
    table = sf::index_put(std::move(table), 0, sf::from_vector(std::vector<std::int64_t>{i * 3}),
                          sf::full({1, 64}, static_cast<float>(i)));
  sf::synchronize();
  EXPECT_LT(sf::memory_stats().peak_bytes_in_use - before, 512 * 64 * 4 / 4);
  EXPECT_EQ(table.to_vector<float>()[static_cast<std::size_t>(15 * 3 * 64 + 1)], 15.0f);
}

STREAMFUSE_FUSION_OFF_AND_ON(SliceUpdate);

TEST(SliceUpdateErrors, AtTheCall) {
  const sf::Tensor x = sf::zeros({3, 4});
  expect_error<sf::ShapeError>(
      [&] {
        return sf::slice_update(x, 1, 3, sf::ones({3, 2}));
      },
      {"slice_update", "2 elements from 3", "axis 1 of size 4"});
  expect_error<sf::ShapeError>(
      [&] {
        return sf::slice_update(x, 1, -5, sf::ones({3, 1}));
      },
      {"slice_update", "from -5"});
  expect_error<sf::ShapeError>(
      [&] {
        return sf::slice_update(x, 1, 0, sf::ones({2, 1}));
      },
      {"slice_update", "src [2, 1] f32", "x's shape"});
  expect_error<sf::ShapeError>(
      [&] {
        return sf::slice_update(x, 2, 0, sf::ones({3, 1}));
      },
      {"slice_update", "axis"});
  expect_error<sf::Error>([&] { return sf::slice_update(x, 0, 0, sf::Tensor()); },
                          {"slice_update"});
  expect_error<sf::ShapeError>(
      [&] {
        return sf::index_put(x, 0, sf::zeros({2}, sf::kI64), sf::ones({3, 4}));
      },
      {"index_put", "src [3, 4] f32", "2 indices"});
  expect_error<sf::ShapeError>(
      [&] {
        return sf::index_put(x, 0, sf::zeros({1, 1}, sf::kI64), sf::ones({1, 4}));
      },
      {"index_put", "1-D"});
  expect_error<sf::DTypeError>(
      [&] {
        return sf::index_put(x, 0, sf::zeros({1}), sf::ones({1, 4}));
      },
      {"index_put", "i32 or i64"});
  expect_error<sf::Error>(
      [&] {
        return sf::index_put(x, 0, sf::from_vector(std::vector<std::int64_t>{1, 3}),
                             sf::ones({2, 4}))
            .to_vector<float>();
      },
      {"index_put", "index 3 at [1]", "size 3"});
  // An empty src changes nothing; a negative start counts from the end.
  EXPECT_EQ(sf::slice_update(x, 0, 3, sf::ones({0, 4})).to_vector<float>(),
            std::vector<float>(12, 0.0f));
  EXPECT_EQ(sf::slice_update(x, 1, -1, sf::ones({3, 1})).to_vector<float>()[3], 1.0f);
}

}  // namespace
