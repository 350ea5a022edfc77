// index_select, embedding and gather against plain loops: random shapes, axes, dtypes, index
// dtypes and layouts, fusion off and on; and their errors, at the call (shapes, dtypes) and where
// the result is read (an index out of range).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <streamfuse/streamfuse.h>

#include "tests/expect_error.h"
#include "tests/fusion_off_and_on.h"
#include "tests/tensor_bytes.h"

namespace sf = streamfuse;
using streamfuse::testing::expect_error;

namespace {

// The bytes of a tensor's elements in row-major order, and how many bytes each has.
struct Bytes {
  std::vector<unsigned char> data;
  std::size_t element = 0;
};
Bytes bytes_with_size(const sf::Tensor& t) {
  return {streamfuse::testing::bytes_of(t), sf::element_size(t.dtype())};
}

std::vector<std::int64_t> strides_of(const sf::Shape& s) {
  std::vector<std::int64_t> st(static_cast<std::size_t>(s.rank()), 1);
  for (int d = s.rank() - 2; d >= 0; --d) st[d] = st[d + 1] * s[d + 1];
  return st;
}

// A tensor of `shape` and `dtype` with distinct-ish values, possibly laid out transposed (a
// view whose strides are not row-major).
sf::Tensor values(sf::Shape shape, sf::DType dtype, bool strided, std::mt19937& rng) {
  sf::Tensor t = sf::randn(shape) * 10.0f;
  if (strided && shape.rank() >= 2) {
    sf::Shape swapped = shape;
    std::swap(swapped[0], swapped[shape.rank() - 1]);
    t = sf::transpose(sf::randn(swapped) * 10.0f, 0, shape.rank() - 1);
  }
  (void)rng;
  return dtype == sf::kBool ? t > 0.0f : t.to(dtype);
}

sf::Tensor index_values(sf::Shape shape, std::int64_t below, sf::DType dtype, std::mt19937& rng) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(shape.numel()));
  for (auto& x : v) x = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(below));
  return sf::from_vector(v, shape).to(dtype);
}

std::vector<std::int64_t> as_i64(const sf::Tensor& t) {
  return t.to(sf::kI64).to_vector<std::int64_t>();
}

class IndexOps : public streamfuse::testing::FusionOffAndOn {};

TEST_P(IndexOps, IndexSelectMatchesALoop) {
  std::mt19937 rng(5);
  const sf::DType dtypes[] = {sf::kF32, sf::kF16, sf::kBF16, sf::kI32, sf::kI64, sf::kBool};
  for (int trial = 0; trial < 60; ++trial) {
    sf::Shape xs;
    const int rank = 1 + static_cast<int>(rng() % 4);
    for (int d = 0; d < rank; ++d) xs.push_back(1 + static_cast<std::int64_t>(rng() % 5));
    const int axis = static_cast<int>(rng() % rank);
    sf::Shape is;
    const int irank = static_cast<int>(rng() % 3);
    for (int d = 0; d < irank; ++d) is.push_back(static_cast<std::int64_t>(rng() % 4));
    const sf::DType dtype = dtypes[rng() % 6];
    const sf::Tensor x = values(xs, dtype, trial % 2 == 1, rng);
    const sf::Tensor ids = index_values(is, xs[axis], trial % 3 ? sf::kI64 : sf::kI32, rng);
    // A negative axis counts from the end.
    const sf::Tensor out = sf::index_select(x, trial % 4 == 0 ? axis - rank : axis, ids);
    SCOPED_TRACE("x " + xs.to_string() + " axis " + std::to_string(axis) + " indices " +
                 is.to_string());

    sf::Shape expected_shape;
    for (int d = 0; d < axis; ++d) expected_shape.push_back(xs[d]);
    for (int d = 0; d < is.rank(); ++d) expected_shape.push_back(is[d]);
    for (int d = axis + 1; d < rank; ++d) expected_shape.push_back(xs[d]);
    ASSERT_EQ(out.shape(), expected_shape);
    ASSERT_EQ(out.dtype(), dtype);

    const Bytes xb = bytes_with_size(x), ob = bytes_with_size(out);
    const std::vector<std::int64_t> idx = as_i64(ids);
    std::int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= xs[d];
    for (int d = axis + 1; d < rank; ++d) inner *= xs[d];
    std::vector<unsigned char> want;
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t j : idx) {
        const std::size_t from = static_cast<std::size_t>((o * xs[axis] + j) * inner) * xb.element;
        want.insert(want.end(), xb.data.begin() + static_cast<std::ptrdiff_t>(from),
                    xb.data.begin() + static_cast<std::ptrdiff_t>(from + inner * xb.element));
      }
    EXPECT_EQ(ob.data, want);
  }
}

TEST_P(IndexOps, GatherMatchesALoop) {
  std::mt19937 rng(9);
  const sf::DType dtypes[] = {sf::kF32, sf::kF16, sf::kI64, sf::kBool};
  for (int trial = 0; trial < 60; ++trial) {
    sf::Shape xs, is;
    const int rank = 1 + static_cast<int>(rng() % 4);
    const int axis = static_cast<int>(rng() % rank);
    for (int d = 0; d < rank; ++d) {
      xs.push_back(1 + static_cast<std::int64_t>(rng() % 5));
      is.push_back(d == axis ? static_cast<std::int64_t>(rng() % 6)
                             : static_cast<std::int64_t>(rng() % (xs[d] + 1)));
    }
    const sf::DType dtype = dtypes[rng() % 4];
    const sf::Tensor x = values(xs, dtype, trial % 2 == 1, rng);
    const sf::Tensor index = index_values(is, xs[axis], trial % 3 ? sf::kI64 : sf::kI32, rng);
    const sf::Tensor out = sf::gather(x, axis, index);
    SCOPED_TRACE("x " + xs.to_string() + " axis " + std::to_string(axis) + " index " +
                 is.to_string());
    ASSERT_EQ(out.shape(), is);
    const Bytes xb = bytes_with_size(x), ob = bytes_with_size(out);
    const std::vector<std::int64_t> idx = as_i64(index);
    const std::vector<std::int64_t> xst = strides_of(xs);
    std::vector<unsigned char> want(ob.data.size());
    std::vector<std::int64_t> at(static_cast<std::size_t>(rank), 0);
    for (std::int64_t p = 0; p < is.numel(); ++p) {
      std::int64_t rest = p, from = 0;
      for (int d = rank - 1; d >= 0; --d) {
        at[d] = rest % is[d];
        rest /= is[d];
      }
      for (int d = 0; d < rank; ++d) from += (d == axis ? idx[p] : at[d]) * xst[d];
      std::memcpy(want.data() + p * xb.element, xb.data.data() + from * xb.element, xb.element);
    }
    EXPECT_EQ(ob.data, want);
  }
}

// Indexing feeds element-wise code and takes results of it, as an embedding lookup in a model
// does: the values are those of the same ops run one by one.
TEST_P(IndexOps, ComposesWithElementWiseOps) {
  const sf::Tensor table = sf::randn({50, 16});
  const sf::Tensor ids = sf::from_vector(std::vector<std::int32_t>{3, 49, 0, 3}, {2, 2});
  for (int i = 0; i < 3; ++i) {
    const sf::Tensor h = sf::embedding(table * 2.0f + 1.0f, ids) * 0.5f;
    ASSERT_EQ(h.shape(), sf::Shape({2, 2, 16}));
    const std::vector<float> got = h.to_vector<float>();
    const std::vector<float> rows = table.to_vector<float>();
    const int row[] = {3, 49, 0, 3};
    for (int r = 0; r < 4; ++r)
      for (int c = 0; c < 16; ++c)
        ASSERT_EQ(got[r * 16 + c], (rows[row[r] * 16 + c] * 2.0f + 1.0f) * 0.5f);
  }
}

STREAMFUSE_FUSION_OFF_AND_ON(IndexOps);

TEST(IndexOpsErrors, AtTheCall) {
  const sf::Tensor x = sf::ones({4, 3});
  const sf::Tensor ids = sf::from_vector(std::vector<std::int64_t>{0, 1});
  expect_error<sf::DTypeError>([&] { return sf::index_select(x, 0, ids.to(sf::kF32)); },
                               {"index_select", "i32 or i64", "f32"});
  expect_error<sf::DTypeError>([&] { return sf::embedding(x, ids > 0); }, {"embedding", "bool"});
  expect_error<sf::ShapeError>([&] { return sf::index_select(x, 2, ids); },
                               {"index_select", "axis"});
  expect_error<sf::ShapeError>([&] { return sf::index_select(sf::full({}, 1.0f), 0, ids); },
                               {"no axis"});
  expect_error<sf::ShapeError>(
      [&] {
        return sf::index_select(sf::ones({0, 2}), 0, ids);
      },
      {"empty"});
  expect_error<sf::ShapeError>(
      [&] {
        return sf::index_select(sf::ones({2, 2, 2, 2, 2}), 0, sf::zeros({1, 1, 1, 1, 1}, sf::kI64));
      },
      {"rank 9"});
  expect_error<sf::ShapeError>([&] { return sf::gather(x, 0, ids); }, {"gather", "rank"});
  expect_error<sf::ShapeError>(
      [&] {
        return sf::gather(x, 0, sf::zeros({2, 5}, sf::kI64));
      },
      {"gather", "larger"});
  expect_error<sf::Error>([&] { return sf::embedding(sf::Tensor(), ids); }, {"embedding"});
  // Empty indices are fine even along an empty axis' neighbours.
  EXPECT_EQ(sf::index_select(x, 0, sf::zeros({0}, sf::kI64)).shape(), sf::Shape({0, 3}));
  EXPECT_EQ(sf::gather(x, 1, sf::zeros({4, 0}, sf::kI32)).shape(), sf::Shape({4, 0}));
}

// An index outside the axis: an Error naming it, its position and the size where the result is
// read; nothing else is lost.
TEST(IndexOpsErrors, OutOfRangeIndicesSurfaceWhereTheResultIsRead) {
  const sf::Tensor table = sf::randn({10, 4});
  for (const bool fusion : {false, true}) {
    sf::Config c = sf::config();
    c.fusion = fusion;
    sf::set_config(c);
    const sf::Tensor ids = sf::from_vector(std::vector<std::int32_t>{1, 2, 10, 3, -1, 0}, {2, 3});
    const sf::Tensor h = sf::embedding(table, ids) + 1.0f;
    expect_error<sf::Error>(
        [&] { return h.to_vector<float>(); },
        {"index_select", "index 10 at [0, 2]", "axis 0 of size 10", "valid: 0 to 9"});
    const sf::Tensor negative = sf::from_vector(std::vector<std::int64_t>{-1}, {1, 1});
    expect_error<sf::Error>([&] { return sf::gather(table, 0, negative).item<float>(); },
                            {"gather", "index -1 at [0, 0]"});
    EXPECT_EQ(sf::embedding(table, sf::from_vector(std::vector<std::int64_t>{9})).shape(),
              sf::Shape({1, 4}));
    EXPECT_EQ(sf::sum(sf::ones({3})).item<float>(), 3.0f);
  }
  sf::set_config(sf::Config());
}

}  // namespace
