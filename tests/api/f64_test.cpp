// f64 through the API, fusion off and on: it computes in double everywhere (operators, scalar
// operands, the math functions: libm's, never through float), promotes above f32, converts to
// and from every dtype with the double's own value, reduces in double, multiplies matrices, and
// is created, drawn, read and printed as the other dtypes are. The tables of every op and every
// cast pair are in elementwise_test.cpp, reductions in reduction_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <vector>

#include <streamfuse/streamfuse.h>

#include "tests/fusion_off_and_on.h"

namespace sf = streamfuse;

namespace {

using D = std::vector<double>;

class F64 : public streamfuse::testing::FusionOffAndOn {};

TEST_P(F64, ArithmeticAndScalarsAreDouble) {
  const D v = {0.1, 1.0, -2.5, 1e300, 3.0};
  const sf::Tensor x = sf::from_vector(v);
  ASSERT_EQ(x.dtype(), sf::kF64);
  const sf::Tensor y = (x + 0.2) * 0.1 - x / 3.0;
  ASSERT_EQ(y.dtype(), sf::kF64);
  const D got = y.to_vector<double>();
  for (std::size_t i = 0; i < v.size(); ++i)
    EXPECT_EQ(got[i], (v[i] + 0.2) * 0.1 - v[i] / 3.0) << v[i];  // 0.2 and 0.1 as doubles
  // An f32 operand is widened exactly, and the result is f64.
  const sf::Tensor f = sf::from_vector(std::vector<float>{0.1f});
  const sf::Tensor s = f + sf::from_vector(D{0.1});
  EXPECT_EQ(s.dtype(), sf::kF64);
  EXPECT_EQ(s.item<double>(), static_cast<double>(0.1f) + 0.1);
  EXPECT_EQ((sf::from_vector(std::vector<std::int64_t>{3}) * sf::from_vector(D{0.5})).dtype(),
            sf::kF64);
  // 1e300 * 10 is inf in double, not earlier.
  EXPECT_EQ((x * 1e8).to_vector<double>()[3], v[3] * 1e8);
  EXPECT_TRUE(std::isinf((x * 1e9).to_vector<double>()[3]));
}

TEST_P(F64, MathFunctionsAreTheDoubleOnes) {
  const D v = {0.1, 1.0, -2.5, 20.5, 1e-5, 0.7};
  const sf::Tensor x = sf::from_vector(v);
  const D e = sf::exp(x).to_vector<double>(), l = sf::log(sf::abs(x)).to_vector<double>();
  const D sn = sf::sin(x).to_vector<double>(), c = sf::cos(x).to_vector<double>();
  const D t = sf::tanh(x).to_vector<double>(), er = sf::erf(x).to_vector<double>();
  const D sq = sf::sqrt(sf::abs(x)).to_vector<double>(), sg = sf::sigmoid(x).to_vector<double>();
  const D p = sf::pow(sf::abs(x), 1.5).to_vector<double>();
  for (std::size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(e[i], std::exp(v[i])) << v[i];
    EXPECT_EQ(l[i], std::log(std::fabs(v[i]))) << v[i];
    EXPECT_EQ(sn[i], std::sin(v[i])) << v[i];
    EXPECT_EQ(c[i], std::cos(v[i])) << v[i];
    EXPECT_EQ(t[i], std::tanh(v[i])) << v[i];
    EXPECT_EQ(er[i], std::erf(v[i])) << v[i];
    EXPECT_EQ(sq[i], std::sqrt(std::fabs(v[i]))) << v[i];
    EXPECT_EQ(sg[i], 1.0 / (1.0 + std::exp(-v[i]))) << v[i];
    EXPECT_EQ(p[i], std::pow(std::fabs(v[i]), 1.5)) << v[i];
  }
  // Math of integers is still f32.
  EXPECT_EQ(sf::exp(sf::from_vector(std::vector<std::int32_t>{1})).dtype(), sf::kF32);
  // max / min: NaN wins, +0 above -0, whatever the order.
  const sf::Tensor a = sf::from_vector(D{0.0, -0.0, NAN, 1.0});
  const sf::Tensor b = sf::from_vector(D{-0.0, 0.0, 1.0, NAN});
  const D mx = sf::maximum(a, b).to_vector<double>(), mn = sf::minimum(a, b).to_vector<double>();
  EXPECT_FALSE(std::signbit(mx[0]) || std::signbit(mx[1]));
  EXPECT_TRUE(std::signbit(mn[0]) && std::signbit(mn[1]));
  EXPECT_TRUE(std::isnan(mx[2]) && std::isnan(mx[3]) && std::isnan(mn[2]) && std::isnan(mn[3]));
}

TEST_P(F64, CastsUseTheDoublesOwnValue) {
  const double kInf = std::numeric_limits<double>::infinity();
  const sf::Tensor x = sf::from_vector(D{NAN, kInf, -kInf, -0.0, 1e300, 16777217.0, 300.7, -1.5,
                                         2147483647.9, -2147483649.0, 65520.0, 123456789012.0});
  EXPECT_EQ(x.to(sf::kI32).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{0, 2147483647, -2147483647 - 1, 0, 2147483647, 16777217, 300,
                                       -1, 2147483647, -2147483647 - 1, 65520, 2147483647}));
  EXPECT_EQ(x.to(sf::kI64).to_vector<std::int64_t>().back(), 123456789012);  // not via float
  EXPECT_EQ(x.to(sf::kU8).to_vector<std::uint8_t>(),
            (std::vector<std::uint8_t>{0, 255, 0, 0, 255, 1, 44, 255, 255, 0, 240, 255}));
  const std::vector<float> f = x.to(sf::kF32).to_vector<float>();
  EXPECT_TRUE(std::isnan(f[0]));
  EXPECT_EQ(f[4], std::numeric_limits<float>::infinity()) << "1e300 overflows f32";
  EXPECT_EQ(f[5], 16777216.0f) << "rounded to nearest even";
  EXPECT_TRUE(std::signbit(f[3]));
  const std::vector<sf::Half> h = x.to(sf::kF16).to_vector<sf::Half>();
  EXPECT_TRUE(std::isinf(static_cast<float>(h[10]))) << "65520 rounds up to inf in f16";
  EXPECT_EQ(x.to(sf::kBool).to_vector<bool>()[0], true) << "NaN is true";
  EXPECT_EQ(x.to(sf::kBool).to_vector<bool>()[3], false);
  // Into f64: exact from f32, rounded to nearest from i64 beyond 2^53.
  EXPECT_EQ(sf::from_vector(std::vector<float>{0.1f}).to(sf::kF64).item<double>(),
            static_cast<double>(0.1f));
  EXPECT_EQ(
      sf::from_vector(std::vector<std::int64_t>{9007199254740993}).to(sf::kF64).item<double>(),
      9007199254740992.0);
  // Through a fused chain: the cast reads the double.
  EXPECT_EQ((x * 1.0).to(sf::kI32).to_vector<std::int32_t>()[5], 16777217);
}

TEST_P(F64, ReductionsAndScansInDouble) {
  const sf::Tensor x = sf::arange(0, 1000, 1, sf::kF64) * 0.5;
  EXPECT_EQ(sf::sum(x).dtype(), sf::kF64);
  EXPECT_EQ(sf::sum(x).item<double>(), 249750.0);
  EXPECT_EQ(sf::mean(x).item<double>(), 249.75);
  EXPECT_EQ(sf::max(x).item<double>(), 499.5);
  EXPECT_EQ(sf::argmax(x).item<std::int64_t>(), 999);
  EXPECT_EQ(sf::cumsum(x, 0).to_vector<double>().back(), 249750.0);
  // Below float's resolution.
  EXPECT_EQ(sf::sum(sf::from_vector(D{1e-10, 1.0})).item<double>(), 1e-10 + 1.0);
  EXPECT_EQ(sf::sum(sf::from_vector(D{1e-10, 1.0}) * 2.0).item<double>(), 2e-10 + 2.0);
  EXPECT_EQ(sf::cumsum(sf::from_vector(D{1.0, 1e-10}), 0).to_vector<double>()[1], 1.0 + 1e-10);
  EXPECT_EQ(
      sf::argsort(sf::from_vector(D{1.0 + 1e-12, 1.0, NAN, -0.0}), 0).to_vector<std::int64_t>(),
      (std::vector<std::int64_t>{3, 1, 0, 2}));
  const sf::Tensor rows = sf::from_vector(D{1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ((rows - sf::mean(rows, 1, true)).to_vector<double>(), (D{-1, 0, 1, -1, 0, 1}));
}

TEST_P(F64, MatmulInDouble) {
  std::mt19937_64 rng(4);
  std::uniform_real_distribution<double> u(-1, 1);
  const std::int64_t m = 5, k = 70, n = 9;
  D av(static_cast<std::size_t>(m * k)), bv(static_cast<std::size_t>(k * n));
  for (double& v : av) v = u(rng);
  for (double& v : bv) v = u(rng);
  const sf::Tensor p = sf::matmul(sf::from_vector(av, {m, k}), sf::from_vector(bv, {k, n}));
  ASSERT_EQ(p.dtype(), sf::kF64);
  const D got = p.to_vector<double>();
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double want = 0;
      for (std::int64_t q = 0; q < k; ++q)
        want += av[static_cast<std::size_t>(i * k + q)] * bv[static_cast<std::size_t>(q * n + j)];
      EXPECT_NEAR(got[static_cast<std::size_t>(i * n + j)], want, 1e-13) << i << ", " << j;
    }
  // Mixed with f32: promoted to f64.
  const sf::Tensor mixed = sf::matmul(sf::ones({2, 3}), sf::from_vector(D{1, 2, 3}, {3, 1}));
  EXPECT_EQ(mixed.dtype(), sf::kF64);
  EXPECT_EQ(mixed.to_vector<double>(), (D{6, 6}));
}

STREAMFUSE_FUSION_OFF_AND_ON(F64);

TEST(F64Values, CreatedDrawnReadAndPrinted) {
  EXPECT_EQ(sf::full({2}, 0.1, sf::kF64).to_vector<double>(), (D{0.1, 0.1})) << "not 0.1f";
  EXPECT_EQ(sf::full({1}, std::int64_t{9007199254740993}, sf::kF64).item<double>(),
            9007199254740992.0);
  EXPECT_EQ(sf::arange(0, 1, 0.1, sf::kF64).to_vector<double>()[3], 3 * 0.1);
  EXPECT_EQ(sf::zeros({2}, sf::kF64).to_vector<double>(), (D{0, 0}));
  EXPECT_EQ(sf::ones_like(sf::zeros({3}), sf::kF64).to_vector<double>(), (D{1, 1, 1}));
  EXPECT_EQ(sf::full({}, 2.5, sf::kF64).item<double>(), 2.5);
  EXPECT_THROW(sf::full({}, 2.5, sf::kF64).item<float>(), sf::DTypeError);
  const double raw[] = {1.5, -2.25};
  EXPECT_EQ(sf::from_blob(raw, {2}).to_vector<double>(), (D{1.5, -2.25}));
  // Draws are the f32 draws, widened (random.cpp).
  for (bool normal : {false, true}) {
    sf::manual_seed(77);
    const std::vector<float> f =
        (normal ? sf::randn({300}, sf::kF32) : sf::rand({300}, sf::kF32)).to_vector<float>();
    sf::manual_seed(77);
    const D d =
        (normal ? sf::randn({300}, sf::kF64) : sf::rand({300}, sf::kF64)).to_vector<double>();
    for (std::size_t i = 0; i < f.size(); ++i) ASSERT_EQ(d[i], static_cast<double>(f[i]));
  }
  std::ostringstream os;
  os << sf::from_vector(D{0.1, 2.5});
  EXPECT_EQ(os.str(), "tensor([0.1000, 2.5000], dtype=f64)");
}

}  // namespace
