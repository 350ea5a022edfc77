// Every element-wise op against a double-precision reference, in every dtype it takes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>

#include "tests/reference.h"

namespace sf = streamfuse;
using namespace streamfuse::testing;

namespace {

// Bound of the float math functions (core/vector_math.h) in f32 ulps: the exhaustive
// sweep (tools/math_ulp_sweep.cpp) measures at most 0.66. Results in
// f16/bf16 are the f32 result rounded once more, so within one ulp of their own.
constexpr double kMathUlps = 1;

struct UnaryCase {
  const char* name;
  sf::Tensor (*op)(sf::Tensor);
  double (*ref)(double);
  bool exact;     // correctly rounded (bitwise equal to the rounded double result)
  bool integers;  // defined on integers with an integer result (else integers compute in f32)
  double lo, hi;  // input range for the random part
};

double ref_relu(double x) { return x <= 0 ? 0 : x; }
double ref_sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double ref_recip(double x) { return 1 / x; }
double ref_rsqrt(double x) { return 1 / std::sqrt(x); }

const UnaryCase kUnary[] = {
    {"neg", sf::neg, [](double x) { return -x; }, true, true, -100, 100},
    {"abs", sf::abs, [](double x) { return std::fabs(x); }, true, true, -100, 100},
    {"exp", sf::exp, [](double x) { return std::exp(x); }, false, false, -90, 90},
    {"log", sf::log, [](double x) { return std::log(x); }, false, false, 1e-6, 1e6},
    {"sqrt", sf::sqrt, [](double x) { return std::sqrt(x); }, true, false, 0, 1e6},
    {"rsqrt", sf::rsqrt, ref_rsqrt, false, false, 1e-6, 1e6},
    {"recip", sf::recip, ref_recip, true, false, -100, 100},
    {"sin", sf::sin, [](double x) { return std::sin(x); }, false, false, -100, 100},
    {"cos", sf::cos, [](double x) { return std::cos(x); }, false, false, -100, 100},
    {"tanh", sf::tanh, [](double x) { return std::tanh(x); }, false, false, -12, 12},
    {"erf", sf::erf, [](double x) { return std::erf(x); }, false, false, -6, 6},
    {"sigmoid", sf::sigmoid, ref_sigmoid, false, false, -100, 100},
    {"relu", sf::relu, ref_relu, true, true, -100, 100},
};

std::vector<double> special_values() {
  return {0.0,     -0.0,     1.0,       -1.0, 0.5, 1e-40, -1e-40, 1e-30, 65504.0, 3.0e38,
          -3.0e38, INFINITY, -INFINITY, NAN,  2.0, 10.0,  -10.0,  88.7,  -103.9};
}

void check_close(const std::vector<double>& got, const std::vector<double>& want, DType dtype,
                 double tolerance, const std::string& what, const std::vector<double>& inputs) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = ulp_error(got[i], want[i], dtype);
    ASSERT_LE(err, tolerance) << what << " at input " << inputs[i] << ": got " << got[i]
                              << ", want " << want[i];
  }
}

class UnaryTest : public ::testing::TestWithParam<UnaryCase> {};

TEST_P(UnaryTest, MatchesDoubleReferenceInEveryDtype) {
  const UnaryCase& c = GetParam();
  std::mt19937_64 rng(42);
  for (DType dtype : {kF32, kF16, kBF16, kI32, kI64, kI8, kU8, kF64}) {
    std::vector<double> in = random_values(4096, dtype, c.lo, c.hi, rng);
    if (is_floating(dtype))
      for (double s : special_values()) in.push_back(round_to(s, dtype));
    const sf::Tensor x = tensor_of(in, {static_cast<std::int64_t>(in.size())}, dtype);
    const sf::Tensor y = c.op(x);
    const DType out = is_floating(dtype) || c.integers ? dtype : kF32;
    ASSERT_EQ(y.dtype(), out) << c.name << " of " << dtype_name(dtype);
    std::vector<double> want;
    for (double v : in) {
      want.push_back(round_to(c.ref(v), out));
    }
    const double tolerance = c.exact || !is_floating(out) ? 0 : out == kF32 ? kMathUlps : 1;
    check_close(values_of(y), want, out, tolerance,
                std::string(c.name) + "/" + all_dtypes_name(dtype), in);
  }
}

INSTANTIATE_TEST_SUITE_P(AllUnary, UnaryTest, ::testing::ValuesIn(kUnary),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(UnaryTest, RejectsBoolWhereUndefined) {
  const sf::Tensor b = sf::full({3}, true);
  EXPECT_THROW(sf::neg(b), sf::DTypeError);
  EXPECT_THROW(sf::abs(b), sf::DTypeError);
  EXPECT_THROW(sf::relu(b), sf::DTypeError);
  EXPECT_EQ(sf::exp(b).dtype(), kF32);  // math of bools computes in f32
  EXPECT_NEAR(sf::exp(b).to_vector<float>()[0], std::exp(1.0f), 1e-6);
}

TEST(UnaryTest, SignedZerosAndNaNsFollowIEEE) {
  const sf::Tensor x = sf::from_vector(std::vector<float>{-0.0f, 0.0f, NAN});
  const auto n = sf::neg(x).to_vector<float>();
  EXPECT_FALSE(std::signbit(n[0]));
  EXPECT_TRUE(std::signbit(n[1]));
  EXPECT_TRUE(std::isnan(n[2]));
  const auto r = sf::relu(x).to_vector<float>();
  EXPECT_EQ(r[0], 0.0f);
  EXPECT_FALSE(std::signbit(r[0]));
  EXPECT_TRUE(std::isnan(r[2]));  // relu keeps NaN, as PyTorch does
  const auto a = sf::abs(x).to_vector<float>();
  EXPECT_FALSE(std::signbit(a[0]));
}

// ---- binary ----------------------------------------------------------------------------------

struct BinaryCase {
  const char* name;
  sf::Tensor (*op)(sf::Tensor, sf::Tensor);
  double (*ref)(double, double);
  std::int64_t (*int_ref)(std::int64_t, std::int64_t, DType out);  // null: integers in f32
  bool exact;
};

// v wrapped to the integer dtype `out` (two's complement, as the kernels' arithmetic wraps).
std::int64_t wrap(std::int64_t v, DType out) {
  switch (out) {
    case kI32:
      return static_cast<std::int32_t>(static_cast<std::uint32_t>(v));
    case kI8:
      return static_cast<std::int8_t>(static_cast<std::uint8_t>(v));
    case kU8:
      return static_cast<std::uint8_t>(v);
    default:
      return v;
  }
}
std::int64_t umul(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(b));
}

const BinaryCase kBinary[] = {
    {"add", [](sf::Tensor a, sf::Tensor b) { return a + b; },
     [](double a, double b) { return a + b; },
     [](std::int64_t a, std::int64_t b, DType out) {
       return wrap(
           static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b)),
           out);
     },
     true},
    {"sub", [](sf::Tensor a, sf::Tensor b) { return a - b; },
     [](double a, double b) { return a - b; },
     [](std::int64_t a, std::int64_t b, DType out) {
       return wrap(
           static_cast<std::int64_t>(static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b)),
           out);
     },
     true},
    {"mul", [](sf::Tensor a, sf::Tensor b) { return a * b; },
     [](double a, double b) { return a * b; },
     [](std::int64_t a, std::int64_t b, DType out) { return wrap(umul(a, b), out); }, true},
    {"div", [](sf::Tensor a, sf::Tensor b) { return a / b; },
     [](double a, double b) { return a / b; }, nullptr, true},
    {"maximum", sf::maximum,
     [](double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); },
     [](std::int64_t a, std::int64_t b, DType) { return std::max(a, b); }, true},
    {"minimum", sf::minimum,
     [](double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); },
     [](std::int64_t a, std::int64_t b, DType) { return std::min(a, b); }, true},
    {"pow", sf::pow, [](double a, double b) { return std::pow(a, b); },
     [](std::int64_t a, std::int64_t b, DType out) {
       if (b < 0)
         return a == 1    ? std::int64_t{1}
                : a == -1 ? ((b & 1) ? std::int64_t{-1} : std::int64_t{1})
                          : std::int64_t{0};
       std::int64_t r = 1;
       for (std::int64_t i = 0; i < b; ++i) r = wrap(umul(r, a), out);
       return r;
     },
     false},
};

class BinaryTest : public ::testing::TestWithParam<BinaryCase> {};

TEST_P(BinaryTest, MatchesDoubleReferenceInEveryDtype) {
  const BinaryCase& c = GetParam();
  const bool is_pow = std::string(c.name) == "pow";
  std::mt19937_64 rng(7);
  for (DType dtype : {kF32, kF16, kBF16, kI32, kI64, kI8, kU8, kF64}) {
    const double lo = is_pow ? (is_floating(dtype) ? 0.01 : -3) : -1000, hi = is_pow ? 9 : 1000;
    std::vector<double> a = random_values(2048, dtype, lo, hi, rng);
    std::vector<double> b = random_values(2048, dtype, is_pow ? -8 : lo, hi, rng);
    if (is_floating(dtype)) {
      for (double s : special_values())
        for (double t : {0.0, -1.0, 2.5, double{INFINITY}, double{NAN}}) {
          a.push_back(round_to(s, dtype));
          b.push_back(round_to(t, dtype));
        }
    } else if (!is_pow) {  // wrap-around at the edges of the type
      const double mx = dtype == kI32  ? 2147483647.0
                        : dtype == kI8 ? 127.0
                        : dtype == kU8 ? 255.0
                                       : 9.2e18,
                   mn = dtype == kI32  ? -2147483648.0
                        : dtype == kI8 ? -128.0
                        : dtype == kU8 ? 0.0
                                       : -9.2e18;
      for (double s : {mx, mn, -1.0, 3.0}) {
        a.push_back(round_to(s, dtype));
        b.push_back(round_to(mx, dtype));
      }
    }
    const auto n = static_cast<std::int64_t>(a.size());
    const sf::Tensor y = c.op(tensor_of(a, {n}, dtype), tensor_of(b, {n}, dtype));
    const DType out = c.int_ref || is_floating(dtype) ? dtype : kF32;
    ASSERT_EQ(y.dtype(), out) << c.name << " of " << dtype_name(dtype);
    if (!is_floating(out)) {
      std::vector<std::int64_t> got;
      if (out == kI64)
        got = y.to_vector<std::int64_t>();
      else
        for (double v : values_of(y)) got.push_back(static_cast<std::int64_t>(v));
      for (std::size_t i = 0; i < a.size(); ++i) {
        const auto ai = static_cast<std::int64_t>(a[i]), bi = static_cast<std::int64_t>(b[i]);
        ASSERT_EQ(got[i], c.int_ref(ai, bi, out))
            << c.name << "/" << dtype_name(out) << " " << ai << ", " << bi;
      }
      continue;
    }
    std::vector<double> want;
    for (std::size_t i = 0; i < a.size(); ++i) want.push_back(round_to(c.ref(a[i], b[i]), out));
    std::vector<double> got = values_of(y);
    for (std::size_t i = 0; i < a.size(); ++i) {
      const double tol = c.exact ? 0 : out == kF32 ? 2 : 1;
      ASSERT_LE(ulp_error(got[i], want[i], out), tol)
          << c.name << "/" << dtype_name(dtype) << " (" << a[i] << ", " << b[i] << "): got "
          << got[i] << ", want " << want[i];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllBinary, BinaryTest, ::testing::ValuesIn(kBinary),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(BinaryTest, MaximumAndMinimumOfSignedZerosDoNotDependOnOrder) {
  const sf::Tensor p = sf::from_vector(std::vector<float>{0.0f, -0.0f});
  const sf::Tensor q = sf::from_vector(std::vector<float>{-0.0f, 0.0f});
  for (float v : sf::maximum(p, q).to_vector<float>()) EXPECT_FALSE(std::signbit(v));
  for (float v : sf::minimum(p, q).to_vector<float>()) EXPECT_TRUE(std::signbit(v));
}

TEST(BinaryTest, BoolMaximumIsOrAndMinimumIsAnd) {
  const sf::Tensor a = sf::from_vector(std::vector<bool>{false, false, true, true});
  const sf::Tensor b = sf::from_vector(std::vector<bool>{false, true, false, true});
  EXPECT_EQ(sf::maximum(a, b).to_vector<bool>(), (std::vector<bool>{false, true, true, true}));
  EXPECT_EQ(sf::minimum(a, b).to_vector<bool>(), (std::vector<bool>{false, false, false, true}));
}

TEST(BinaryTest, ScalarOperandsOnEitherSide) {
  const sf::Tensor x = sf::from_vector(std::vector<float>{1, 2, 4});
  EXPECT_EQ((x + 1).to_vector<float>(), (std::vector<float>{2, 3, 5}));
  EXPECT_EQ((1 + x).to_vector<float>(), (std::vector<float>{2, 3, 5}));
  EXPECT_EQ((x - 1).to_vector<float>(), (std::vector<float>{0, 1, 3}));
  EXPECT_EQ((1 - x).to_vector<float>(), (std::vector<float>{0, -1, -3}));
  EXPECT_EQ((x * 2.5).to_vector<float>(), (std::vector<float>{2.5, 5, 10}));
  EXPECT_EQ((8 / x).to_vector<float>(), (std::vector<float>{8, 4, 2}));
  EXPECT_EQ((x / 8).to_vector<float>(), (std::vector<float>{0.125, 0.25, 0.5}));
  EXPECT_EQ(sf::pow(x, 2).to_vector<float>(), (std::vector<float>{1, 4, 16}));
  EXPECT_EQ(sf::pow(2, x).to_vector<float>(), (std::vector<float>{2, 4, 16}));
  EXPECT_EQ(sf::maximum(x, 2).to_vector<float>(), (std::vector<float>{2, 2, 4}));
  EXPECT_EQ(sf::minimum(x, 2).to_vector<float>(), (std::vector<float>{1, 2, 2}));
  EXPECT_EQ(sf::clamp(x, 1.5, 3).to_vector<float>(), (std::vector<float>{1.5, 2, 3}));
}

TEST(BinaryTest, HalfScalarsKeepFloatPrecisionUntilTheResultRounds) {
  // 0.1 is used as the float 0.1f, not first rounded to f16 (as PyTorch computes half ops).
  const sf::Tensor x = sf::from_vector(std::vector<sf::Half>{sf::Half(3.0f)});
  const float want = static_cast<float>(sf::Half(3.0f * 0.1f));
  EXPECT_EQ(static_cast<float>((x * 0.1).item<sf::Half>()), want);
}

// ---- comparisons, logic, where, casts ---------------------------------------------------------

TEST(CompareTest, EveryComparisonInEveryDtypeIncludingNaN) {
  const std::vector<double> a = {1, 2, 3, -1, 0, NAN, INFINITY};
  const std::vector<double> b = {1, 3, 2, -1, -0.0, 0, INFINITY};
  for (DType dtype : {kF32, kF16, kBF16, kI32, kI64, kBool, kI8, kU8, kF64}) {
    std::vector<double> ar, br;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (!is_floating(dtype) && (std::isnan(a[i]) || std::isinf(a[i]))) continue;
      ar.push_back(round_to(a[i], dtype));
      br.push_back(round_to(b[i], dtype));
    }
    const auto n = static_cast<std::int64_t>(ar.size());
    const sf::Tensor x = tensor_of(ar, {n}, dtype), y = tensor_of(br, {n}, dtype);
    struct {
      sf::Tensor t;
      std::function<bool(double, double)> f;
    } checks[] = {{x == y, std::equal_to<>()}, {x != y, std::not_equal_to<>()},
                  {x < y, std::less<>()},      {x <= y, std::less_equal<>()},
                  {x > y, std::greater<>()},   {x >= y, std::greater_equal<>()}};
    for (auto& c : checks) {
      ASSERT_EQ(c.t.dtype(), kBool);
      const std::vector<bool> got = c.t.to_vector<bool>();
      for (std::size_t i = 0; i < ar.size(); ++i)
        EXPECT_EQ(got[i], c.f(ar[i], br[i]))
            << dtype_name(dtype) << " " << ar[i] << " vs " << br[i];
    }
  }
}

TEST(CompareTest, AgainstScalars) {
  const sf::Tensor x = sf::from_vector(std::vector<std::int32_t>{1, 2, 3});
  EXPECT_EQ((x > 1.5).to_vector<bool>(), (std::vector<bool>{false, true, true}));
  EXPECT_EQ((x == 2).to_vector<bool>(), (std::vector<bool>{false, true, false}));
  EXPECT_EQ((x <= 2).to_vector<bool>(), (std::vector<bool>{true, true, false}));
}

TEST(LogicalTest, AnyDtypeReadsNonZeroAsTrue) {
  const sf::Tensor a = sf::from_vector(std::vector<float>{0, 2, NAN, -0.0f});
  const sf::Tensor b = sf::from_vector(std::vector<std::int64_t>{5, 0, 1, 1});
  EXPECT_EQ(sf::logical_and(a, b).to_vector<bool>(),
            (std::vector<bool>{false, false, true, false}));
  EXPECT_EQ(sf::logical_or(a, b).to_vector<bool>(), (std::vector<bool>{true, true, true, true}));
  EXPECT_EQ(sf::logical_not(a).to_vector<bool>(), (std::vector<bool>{true, false, false, true}));
}

TEST(WhereTest, BroadcastsAndPromotes) {
  const sf::Tensor cond = sf::from_vector(std::vector<bool>{true, false, true}, {3, 1});
  const sf::Tensor a = sf::from_vector(std::vector<std::int32_t>{1, 2}, {1, 2});
  const sf::Tensor b = sf::full({1}, 0.5f);
  const sf::Tensor w = sf::where(cond, a, b);
  EXPECT_EQ(w.dtype(), kF32);
  EXPECT_EQ(w.shape(), (sf::Shape{3, 2}));
  EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{1, 2, 0.5, 0.5, 1, 2}));
  EXPECT_EQ(sf::where(cond, a, 7).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{1, 2, 7, 7, 1, 2}));
  EXPECT_EQ(sf::where(cond, -1, a).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{-1, -1, 1, 2, -1, -1}));
}

TEST(CastTest, EveryPairOfDtypes) {
  const std::vector<double> values = {0,     1,     -1,    2.5,  -2.5, 100,      1e10,
                                      -1e10, 65504, 70000, 1e-8, NAN,  INFINITY, -INFINITY};
  for (DType from : {kF32, kF16, kBF16, kI32, kI64, kBool, kI8, kU8, kF64}) {
    std::vector<double> in;
    for (double v : values) {
      if (!is_floating(from) && !std::isfinite(v)) continue;
      in.push_back(round_to(v, from));
    }
    const auto n = static_cast<std::int64_t>(in.size());
    const sf::Tensor x = tensor_of(in, {n}, from);
    for (DType to : {kF32, kF16, kBF16, kI32, kI64, kBool, kI8, kU8, kF64}) {
      const std::vector<double> got = values_of(x.to(to));
      for (std::size_t i = 0; i < in.size(); ++i) {
        double want = round_to(in[i], to);
        // Integers narrow by wrapping, as in C++ and PyTorch.
        if (!is_floating(from) && !is_floating(to) && to != kBool)
          want = static_cast<double>(wrap(static_cast<std::int64_t>(in[i]), to));
        if (std::isnan(want))
          EXPECT_TRUE(std::isnan(got[i]));
        else
          EXPECT_EQ(got[i], want) << dtype_name(from) << " -> " << dtype_name(to) << " of "
                                  << in[i];
      }
    }
  }
}

TEST(CastTest, FloatToIntegerSaturatesAndNaNIsZero) {
  const sf::Tensor x = sf::from_vector(std::vector<float>{NAN, 3e9f, -3e9f, 1e30f, -7.9f});
  EXPECT_EQ(x.to(kI32).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{0, 2147483647, -2147483647 - 1, 2147483647, -7}));
  EXPECT_EQ(x.to(kI64).to_vector<std::int64_t>()[3], INT64_MAX);
}

// ---- layouts ----------------------------------------------------------------------------------

TEST(LayoutTest, StridedBroadcastAndTransposedInputsEqualContiguousCopies) {
  std::mt19937_64 rng(3);
  const sf::Tensor base = tensor_of(random_values(6 * 8 * 10, kF32, -5, 5, rng), {6, 8, 10}, kF32);
  const sf::Tensor t = base.transpose(0, 2);                    // [10, 8, 6], strided
  const sf::Tensor s = base.slice(1, 1, 7, 2).transpose(0, 1);  // [3, 6, 10], gaps
  const sf::Tensor row = tensor_of(random_values(6, kF32, -5, 5, rng), {6}, kF32);
  const sf::Tensor tc = t.contiguous();
  EXPECT_EQ((t * row + sf::exp(t)).to_vector<float>(), (tc * row + sf::exp(tc)).to_vector<float>());
  const sf::Tensor sc = s.contiguous();
  const sf::Tensor col = sf::arange(3).to(kF32).reshape({3, 1, 1});
  EXPECT_EQ((s - col).to_vector<float>(), (sc - col).to_vector<float>());
  // Mixed dtypes through the converting path, with a broadcast f16 operand.
  const sf::Tensor h = row.to(kF16);
  EXPECT_EQ((t + h).to_vector<float>(), (tc + h.to(kF32)).to_vector<float>());
  // Strided output dtype conversion (bool result of a strided comparison).
  EXPECT_EQ((t > 0).to_vector<bool>(), (tc > 0).to_vector<bool>());
}

TEST(LayoutTest, LargeTensorsSplitAcrossThreadsGiveTheSameValues) {
  const std::int64_t n = 1 << 20;
  const sf::Tensor x = sf::arange(n).to(kF32) * 0.001f;
  const std::vector<float> y = sf::sin(x).to_vector<float>();
  const std::vector<float> xs = x.to_vector<float>();
  const sf::Tensor one =
      sf::from_vector(std::vector<float>(xs.begin() + 777777, xs.begin() + 777778));
  EXPECT_EQ(y[777777], sf::sin(one).item<float>());
}

}  // namespace
