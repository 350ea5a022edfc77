// Reductions against double-precision references, over every axis, layout and dtype.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "tests/reference.h"

namespace sf = streamfuse;
using namespace streamfuse::testing;

namespace {

// Reference reduction of `values` (row-major `shape`) over `axis` (-1 for... see below).
struct Reference {
  std::vector<double> sum, mean, max, min, argmax;
};

Reference reduce_ref(const std::vector<double>& v, const sf::Shape& shape, int axis) {
  std::int64_t outer = 1, len = 1, inner = 1;
  if (axis < 0) {
    len = shape.numel();
  } else {
    for (int d = 0; d < axis; ++d) outer *= shape[d];
    len = shape[axis];
    for (int d = axis + 1; d < shape.rank(); ++d) inner *= shape[d];
  }
  Reference r;
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t i = 0; i < inner; ++i) {
      double s = 0, mx = -INFINITY, mn = INFINITY;
      std::int64_t am = -1;
      bool nan = false;
      for (std::int64_t k = 0; k < len; ++k) {
        const double x = v[static_cast<std::size_t>((o * len + k) * inner + i)];
        s += x;
        if (std::isnan(x)) {
          if (!nan) am = k;
          nan = true;
        } else if (!nan && (am < 0 || x > mx)) {
          am = k;
        }
        mx = nan ? NAN : std::max(mx, x);
        mn = nan ? NAN : std::min(mn, x);
      }
      r.sum.push_back(s);
      r.mean.push_back(s / static_cast<double>(len));
      r.max.push_back(mx);
      r.min.push_back(mn);
      r.argmax.push_back(static_cast<double>(am));
    }
  }
  return r;
}

void expect_values(const sf::Tensor& t, const std::vector<double>& want, DType dtype, double ulps,
                   const std::string& what) {
  ASSERT_EQ(t.dtype(), dtype) << what;
  const std::vector<double> got = values_of(t);
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double w = round_to(want[i], dtype);
    if (is_floating(dtype))
      ASSERT_LE(ulp_error(got[i], w, dtype), ulps) << what << " #" << i;
    else
      ASSERT_EQ(got[i], w) << what << " #" << i;
  }
}

TEST(ReductionTest, EveryReductionOverEveryAxisAndDtype) {
  std::mt19937_64 rng(11);
  const sf::Shape shape{5, 7, 33};
  for (DType dtype : {kF32, kF16, kBF16, kI32, kI64, kBool, kI8, kU8, kF64}) {
    std::vector<double> v = random_values(static_cast<std::size_t>(shape.numel()), dtype,
                                          dtype == kBool ? 0 : -50, dtype == kBool ? 2 : 50, rng);
    // f64 sums are double sums, not rounded from a wider one: multiples of 2^-20 add exactly in
    // any order, so the reference's order gives the same double.
    if (dtype == kF64)
      for (double& x : v) x = std::ldexp(std::round(std::ldexp(x, 20)), -20);
    const sf::Tensor x = tensor_of(v, shape, dtype);
    const DType sum_dtype = is_floating(dtype) ? dtype : kI64;
    const DType mean_dtype = is_floating(dtype) ? dtype : kF32;
    for (int axis = -1; axis < 3; ++axis) {
      const Reference r = reduce_ref(v, shape, axis);
      const std::string what = std::string(dtype_name(dtype)) + " axis " + std::to_string(axis);
      // Sums accumulate in double: the result is the correctly rounded sum (or within an ulp).
      if (axis < 0) {
        expect_values(sf::sum(x), r.sum, sum_dtype, 1, "sum " + what);
        expect_values(sf::mean(x), r.mean, mean_dtype, 1, "mean " + what);
        expect_values(sf::max(x), r.max, dtype, 0, "max " + what);
        expect_values(sf::min(x), r.min, dtype, 0, "min " + what);
        expect_values(sf::argmax(x), r.argmax, kI64, 0, "argmax " + what);
        EXPECT_EQ(sf::sum(x).rank(), 0);
      } else {
        expect_values(sf::sum(x, axis), r.sum, sum_dtype, 1, "sum " + what);
        expect_values(sf::mean(x, axis), r.mean, mean_dtype, 1, "mean " + what);
        expect_values(sf::max(x, axis), r.max, dtype, 0, "max " + what);
        expect_values(sf::min(x, axis), r.min, dtype, 0, "min " + what);
        expect_values(sf::argmax(x, axis), r.argmax, kI64, 0, "argmax " + what);
        sf::Shape kept = shape;
        kept[axis] = 1;
        EXPECT_EQ(sf::sum(x, axis, true).shape(), kept);
        EXPECT_EQ(sf::argmax(x, axis - 3, true).shape(), kept) << "negative axis";
      }
    }
  }
}

TEST(ReductionTest, StridedAndBroadcastInputs) {
  std::mt19937_64 rng(5);
  const std::vector<double> v = random_values(6 * 40, kF32, -3, 3, rng);
  const sf::Tensor x = tensor_of(v, {6, 40}, kF32);
  const sf::Tensor t = x.transpose(0, 1);  // [40, 6], column-major
  for (int axis = 0; axis < 2; ++axis) {
    EXPECT_EQ(sf::sum(t, axis).to_vector<float>(),
              sf::sum(t.contiguous(), axis).to_vector<float>());
    EXPECT_EQ(sf::argmax(t, axis).to_vector<std::int64_t>(),
              sf::argmax(t.contiguous(), axis).to_vector<std::int64_t>());
  }
  EXPECT_EQ(sf::max(t).item<float>(), sf::max(x).item<float>());
  const sf::Tensor e =
      sf::from_vector(std::vector<float>{1, 2, 3}).reshape({3, 1}).expand({3, 1000});
  EXPECT_EQ(sf::sum(e, 1).to_vector<float>(), (std::vector<float>{1000, 2000, 3000}));
  EXPECT_EQ(sf::sum(e).item<float>(), 6000.0f);
  const sf::Tensor s = x.slice(1, 1, 40, 3);
  EXPECT_EQ(sf::mean(s, 1).to_vector<float>(), sf::mean(s.contiguous(), 1).to_vector<float>());
}

TEST(ReductionTest, LongReductionsDoNotDependOnThreadsOrBlocks) {
  const std::int64_t n = 3'000'017;  // several blocks, odd tail
  const sf::Tensor x = sf::sin(sf::arange(n).to(kF32));
  double want = 0;
  for (float v : x.to_vector<float>()) want += v;
  EXPECT_NEAR(sf::sum(x).item<float>(), want, std::fabs(want) * 1e-6 + 1e-3);
  const float once = sf::sum(x).item<float>();
  sf::Config c = sf::config();
  const int saved = c.num_threads;
  c.num_threads = 1;
  sf::set_config(c);
  EXPECT_EQ(sf::sum(x).item<float>(), once) << "one thread gives the same bits";
  EXPECT_EQ(sf::argmax(x).item<std::int64_t>(),
            sf::argmax(x.reshape({1, n}), 1).item<std::int64_t>());
  c.num_threads = saved;
  sf::set_config(c);
}

// Reductions over an axis longer than a block (core/reduce_math.h, SF_REDUCE_BLOCK): whether
// rows are split over threads (few long rows) or not, and rows or columns of a layout, the fold
// order is the block structure, so the thread count changes no bit.
TEST(ReductionTest, AxisReductionsDoNotDependOnThreads) {
  const std::int64_t len = 200'003;  // past three blocks, odd tail
  // Where the grouping shows: 1e30 in block 0, -1e30 and then 1 in block 1, all in lane 0. Folded
  // as one run the 1 survives; folded block by block it is lost in block 1's partial (-1e30).
  std::vector<float> values(static_cast<std::size_t>(3 * len), 0.0f);
  for (std::int64_t r = 0; r < 3; ++r) {
    values[static_cast<std::size_t>(r * len)] = 1e30f;
    values[static_cast<std::size_t>(r * len + 65536)] = -1e30f;
    values[static_cast<std::size_t>(r * len + 65536 + 16)] = 1.0f;
  }
  const sf::Tensor rows = sf::from_vector(values, {3, len});
  const sf::Tensor cols = rows.transpose(0, 1).contiguous();  // [len, 3]: reduce axis 0 strided
  auto results = [&] {
    std::vector<float> r;
    for (const sf::Tensor& t :
         {sf::sum(rows, 1), sf::mean(rows, 1), sf::sum(cols, 0), sf::mean(cols, 0)})
      for (float v : t.to_vector<float>()) r.push_back(v);
    return r;
  };
  sf::Config c = sf::config();
  const int saved = c.num_threads;
  std::vector<std::vector<float>> by_threads;
  for (int threads : {1, 2, 4}) {
    c.num_threads = threads;
    sf::set_config(c);
    by_threads.push_back(results());
  }
  c.num_threads = saved;
  sf::set_config(c);
  EXPECT_EQ(by_threads[0][0], 0.0f) << "the block structure: block 1's partial lost the 1";
  for (std::size_t i = 1; i < by_threads.size(); ++i)
    for (std::size_t k = 0; k < by_threads[0].size(); ++k)
      EXPECT_EQ(std::bit_cast<std::uint32_t>(by_threads[i][k]),
                std::bit_cast<std::uint32_t>(by_threads[0][k]))
          << "result " << k << " differs between thread counts";
}

TEST(ReductionTest, NaNPropagatesAndArgmaxFindsTheFirst) {
  const sf::Tensor x = sf::from_vector(std::vector<float>{1, NAN, 5, NAN, 5});
  EXPECT_TRUE(std::isnan(sf::max(x).item<float>()));
  EXPECT_TRUE(std::isnan(sf::min(x).item<float>()));
  EXPECT_EQ(sf::argmax(x).item<std::int64_t>(), 1);
  const sf::Tensor y = sf::from_vector(std::vector<float>{1, 5, 2, 5});
  EXPECT_EQ(sf::argmax(y).item<std::int64_t>(), 1) << "ties: the first maximum";
  const sf::Tensor z = sf::full({1000}, -INFINITY);
  EXPECT_EQ(sf::argmax(z).item<std::int64_t>(), 0);
  EXPECT_EQ(sf::max(z).item<float>(), -INFINITY);
}

TEST(ReductionTest, EmptyReductions) {
  const sf::Tensor e = sf::zeros({3, 0});
  EXPECT_EQ(sf::sum(e).item<float>(), 0.0f);
  EXPECT_EQ(sf::sum(e, 1).to_vector<float>(), (std::vector<float>{0, 0, 0}));
  EXPECT_TRUE(std::isnan(sf::mean(e).item<float>()));
  EXPECT_EQ(sf::sum(e, 0).shape(), (sf::Shape{0}));
  EXPECT_THROW(sf::max(e), sf::ShapeError);
  EXPECT_THROW(sf::argmax(e, 1), sf::ShapeError);
  EXPECT_EQ(sf::max(e, 0).shape(), (sf::Shape{0}))
      << "reducing a non-empty axis of an empty tensor";
}

TEST(ReductionTest, IntegerSumsWrapAndMeansAreFloat) {
  const sf::Tensor x = sf::full({4}, std::int64_t{1} << 62);
  EXPECT_EQ(sf::sum(x).item<std::int64_t>(), 0) << "4 * 2^62 wraps to 0";
  const sf::Tensor b = sf::from_vector(std::vector<bool>{true, true, false});
  EXPECT_EQ(sf::sum(b).item<std::int64_t>(), 2);
  EXPECT_FLOAT_EQ(sf::mean(b).item<float>(), 2.0f / 3.0f);
  EXPECT_EQ(sf::max(b).item<bool>(), true);
}

}  // namespace

// Sums of bool count every element whatever the layout (runs with lanes, several runs a block,
// blocks): GCC 12.2 once counted one element per lane here (core/reduce_math.h says where).
TEST(ReductionTest, BoolSumsCountEveryElementInEveryLayout) {
  for (std::int64_t n : {63, 64, 100, 1155, 140000}) {
    EXPECT_EQ(sf::sum(sf::ones({n}, kBool)).item<std::int64_t>(), n) << n;
    EXPECT_EQ(sf::sum(sf::ones({3, n}, kBool), 1).to_vector<std::int64_t>(),
              std::vector<std::int64_t>(3, n))
        << n;
  }
  const sf::Tensor slice = sf::ones({300, 200}, kBool).slice(1, 0, 100);  // runs of 100
  EXPECT_EQ(sf::sum(slice).item<std::int64_t>(), 30000);
  EXPECT_EQ(sf::sum(slice.transpose(0, 1)).item<std::int64_t>(), 30000);
  EXPECT_EQ(sf::sum(sf::ones({1, 700}, kBool).expand({100, 700})).item<std::int64_t>(), 70000);
}
