// Accuracy and special values of core/vector_math.h, compiled once per ISA level
// (STREAMFUSE_ISA = v2, v3, v4) with the kernel flags, so each level's code is what is tested.
// Errors are measured in ulp of the float result against the C library in double precision;
// the bounds are the exhaustive maxima from tools/math_ulp_sweep.cpp, rounded up.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/vector_math.h"
#include "tests/isa_variant.h"

namespace {

using streamfuse::testing::kIsa;
using streamfuse::testing::missing_isa;

#if defined(__FMA__)
constexpr bool kFma = true;
#else
constexpr bool kFma = false;
#endif

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr double kMismatch = std::numeric_limits<double>::infinity();

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
uint32_t to_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// |result - ref| / ulp(ref), ulp taken at ref's float exponent (2^-149 for denormals); infinity
// when the two disagree on NaN, infinity or the sign of an exact zero.
double ulp_error(float result, double ref) {
  if (std::isnan(ref) || std::isnan(result)) {
    return std::isnan(ref) && std::isnan(result) ? 0.0 : kMismatch;
  }
  if (std::isinf(result)) return result == static_cast<float>(ref) ? 0.0 : kMismatch;
  if (ref == 0.0) {
    return result == 0.0f && std::signbit(result) == std::signbit(ref) ? 0.0 : kMismatch;
  }
  double a = std::fabs(ref);
  int e = a > 0x1.fffffep127 ? 127 : std::max(std::ilogb(a), -126);
  return std::fabs(static_cast<double>(result) - ref) / std::ldexp(1.0, e - 23);
}

using Unary = float (*)(float);
using Reference = double (*)(double);

struct Fn {
  const char* name;
  Unary fn;
  Reference ref;
  double bound;  // max ulp over all inputs, this build's FMA setting
};

// The functions are applied in a plain loop over an array: the auto-vectorized code the kernels
// run. (Each wrapper inlines its function into the loop.)
template <float (*F)(float)>
void apply(const float* in, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = F(in[i]);
}
using Apply = void (*)(const float*, float*, size_t);

float exp_(float x) { return sf_exp(x); }
float log_(float x) { return sf_log(x); }
float erf_(float x) { return sf_erf(x); }
float tanh_(float x) { return sf_tanh(x); }
float sin_(float x) { return sf_sin(x); }
float cos_(float x) { return sf_cos(x); }
float sigmoid_(float x) { return sf_sigmoid(x); }
double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double exp_ref(double x) { return std::exp(x); }
double log_ref(double x) { return std::log(x); }
double erf_ref(double x) { return std::erf(x); }
double tanh_ref(double x) { return std::tanh(x); }
double sin_ref(double x) { return std::sin(x); }
double cos_ref(double x) { return std::cos(x); }

struct Case {
  Fn fn;
  Apply apply;
};

const Case kCases[] = {
    {{"exp", exp_, exp_ref, kFma ? 0.91 : 0.78}, apply<sf_exp>},
    {{"log", log_, log_ref, kFma ? 0.61 : 0.66}, apply<sf_log>},
    {{"erf", erf_, erf_ref, kFma ? 0.733 : 0.883}, apply<sf_erf>},
    {{"tanh", tanh_, tanh_ref, 0.501}, apply<sf_tanh>},
    {{"sin", sin_, sin_ref, 0.501}, apply<sf_sin>},
    {{"cos", cos_, cos_ref, 0.501}, apply<sf_cos>},
    {{"sigmoid", sigmoid_, sigmoid_ref, 0.501}, apply<sf_sigmoid>},
};

const Case& find(const char* name) {
  for (const Case& c : kCases) {
    if (std::strcmp(c.fn.name, name) == 0) return c;
  }
  std::abort();
}

struct Sweep {
  double max_ulp = 0.0;
  float worst = 0.0f;
  size_t mismatches = 0;
  float first_mismatch = 0.0f;
};

Sweep measure(const Case& c, const std::vector<float>& in) {
  std::vector<float> out(in.size());
  c.apply(in.data(), out.data(), in.size());
  Sweep s;
  for (size_t i = 0; i < in.size(); ++i) {
    double err = ulp_error(out[i], c.fn.ref(in[i]));
    if (err == kMismatch) {
      if (s.mismatches++ == 0) s.first_mismatch = in[i];
    } else if (err > s.max_ulp) {
      s.max_ulp = err;
      s.worst = in[i];
    }
  }
  return s;
}

void expect_within_bound(const Case& c, const std::vector<float>& in, const char* what) {
  Sweep s = measure(c, in);
  EXPECT_EQ(s.mismatches, 0u) << c.fn.name << " " << what
                              << ": NaN/inf/zero-sign mismatch, first at " << std::hexfloat
                              << s.first_mismatch;
  EXPECT_LE(s.max_ulp, c.fn.bound) << c.fn.name << " " << what << ": worst input " << std::hexfloat
                                   << s.worst << " (" << std::defaultfloat << s.worst << ")";
}

// 2^22 inputs spread over all 2^32 bit patterns: a stride of 2^10 with a scrambled offset, so
// every exponent and sign is hit with varied mantissas.
std::vector<float> all_patterns() {
  std::vector<float> v;
  v.reserve(1 << 22);
  for (uint32_t i = 0; i < (1u << 22); ++i) {
    uint32_t jitter = (i * 0x9E3779B1u) >> 22;
    v.push_back(from_bits((i << 10) | jitter));
  }
  return v;
}

// Every float in [lo, hi] when there are at most `max` of them, else `max` evenly spaced by bits.
std::vector<float> interval(float lo, float hi, uint32_t max = 1u << 20) {
  std::vector<float> v;
  auto key = [](float f) {  // monotone map from float order to integers
    uint32_t b = to_bits(f);
    return (b & 0x80000000u) ? int64_t{0x80000000} - (b & 0x7fffffffu) : int64_t{0x80000000} + b;
  };
  auto unkey = [](int64_t k) {
    return k >= 0x80000000 ? from_bits(static_cast<uint32_t>(k - 0x80000000))
                           : from_bits(0x80000000u | static_cast<uint32_t>(0x80000000 - k));
  };
  int64_t a = key(lo), b = key(hi);
  int64_t step = std::max<int64_t>(1, (b - a) / max);
  for (int64_t k = a; k <= b; k += step) v.push_back(unkey(k));
  return v;
}

class VectorMathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why = missing_isa();
    if (!why.empty()) GTEST_SKIP() << "built for " << kIsa << ": " << why;
  }
};

TEST_F(VectorMathTest, AllBitPatternsWithinBound) {
  std::vector<float> in = all_patterns();
  for (const Case& c : kCases) expect_within_bound(c, in, "all patterns");
}

TEST_F(VectorMathTest, VectorAndScalarCodeAgreeBitwise) {
  // The same source must give the same bits whether or not the compiler vectorized it.
  std::vector<float> in = all_patterns();
  in.resize(1 << 18);
  std::vector<float> out(in.size());
  for (const Case& c : kCases) {
    c.apply(in.data(), out.data(), in.size());
    size_t differ = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      volatile Unary scalar = c.fn.fn;  // an opaque call: never vectorized
      float s = scalar(in[i]);
      if (to_bits(s) != to_bits(out[i]) && !(std::isnan(s) && std::isnan(out[i]))) ++differ;
    }
    EXPECT_EQ(differ, 0u) << c.fn.name;
  }
}

TEST_F(VectorMathTest, ExpCriticalIntervals) {
  const Case& c = find("exp");
  expect_within_bound(c, interval(-0.5f, 0.5f), "near 0");
  expect_within_bound(c, interval(-1e-6f, 1e-6f, 1 << 16), "tiny");
  expect_within_bound(c, interval(-104.0f, -87.0f, 1 << 21), "denormal results");
  expect_within_bound(c, interval(87.0f, 89.0f), "near overflow");
  expect_within_bound(c, interval(-10.0f, 10.0f, 1 << 20), "moderate");
}

TEST_F(VectorMathTest, ExpSpecialValues) {
  EXPECT_EQ(sf_exp(0.0f), 1.0f);
  EXPECT_EQ(sf_exp(-0.0f), 1.0f);
  EXPECT_EQ(sf_exp(1.0f), 0x1.5bf0a8p+1f);
  EXPECT_EQ(sf_exp(kInf), kInf);
  EXPECT_EQ(to_bits(sf_exp(-kInf)), 0u);
  EXPECT_TRUE(std::isnan(sf_exp(kNan)));
  EXPECT_TRUE(std::isnan(sf_exp(-kNan)));
  EXPECT_EQ(sf_exp(0x1.62e42ep+6f), 0x1.ffff08p+127f);  // largest finite result
  EXPECT_EQ(sf_exp(0x1.62e430p+6f), kInf);              // first overflow
  EXPECT_EQ(sf_exp(1e30f), kInf);
  EXPECT_EQ(sf_exp(-0x1.9fe368p+6f), 0x1p-149f);  // smallest denormal
  EXPECT_EQ(sf_exp(-0x1.9fe36ap+6f), 0.0f);       // rounds to zero below 2^-150
  EXPECT_EQ(to_bits(sf_exp(-1e30f)), 0u);
  EXPECT_EQ(sf_exp(-0x1.5d589ep+6f), 0x1.00004cp-126f);  // smallest normal result
  EXPECT_EQ(sf_exp(-0x1.5d58a0p+6f), 0x1.ffff98p-127f);  // largest denormal result
  EXPECT_EQ(sf_exp(0x1p-149f), 1.0f);
  EXPECT_EQ(sf_exp(-0x1p-149f), 1.0f);
}

TEST_F(VectorMathTest, LogCriticalIntervals) {
  const Case& c = find("log");
  expect_within_bound(c, interval(0.5f, 2.0f, 1 << 21), "near 1");
  expect_within_bound(c, interval(0x1p-149f, 0x1p-126f, 1 << 20), "denormal inputs");
  expect_within_bound(c, interval(0x1p-126f, 0x1p-120f, 1 << 16), "smallest normals");
  expect_within_bound(c, interval(0x1p120f, 0x1.fffffep127f, 1 << 16), "largest");
}

TEST_F(VectorMathTest, LogSpecialValues) {
  EXPECT_EQ(sf_log(1.0f), 0.0f);
  EXPECT_FALSE(std::signbit(sf_log(1.0f)));
  EXPECT_EQ(sf_log(0.0f), -kInf);
  EXPECT_EQ(sf_log(-0.0f), -kInf);
  EXPECT_EQ(sf_log(kInf), kInf);
  EXPECT_TRUE(std::isnan(sf_log(-kInf)));
  EXPECT_TRUE(std::isnan(sf_log(-1.0f)));
  EXPECT_TRUE(std::isnan(sf_log(-0x1p-149f)));
  EXPECT_TRUE(std::isnan(sf_log(kNan)));
  EXPECT_EQ(sf_log(0x1p-149f), -0x1.9d1da0p+6f);
  EXPECT_EQ(sf_log(0x1p-126f), -0x1.5d58a0p+6f);
  EXPECT_EQ(sf_log(0x1.fffffep127f), 0x1.62e430p+6f);
  EXPECT_EQ(sf_log(2.0f), 0x1.62e430p-1f);
}

TEST_F(VectorMathTest, SinCosCriticalIntervals) {
  for (const char* name : {"sin", "cos"}) {
    const Case& c = find(name);
    expect_within_bound(c, interval(-4.0f, 4.0f, 1 << 20), "[-4, 4]");
    expect_within_bound(c, interval(0x1p-149f, 0x1p-10f, 1 << 16), "tiny");
    expect_within_bound(c, interval(1e4f, 1e6f, 1 << 18), "moderate");
    expect_within_bound(c, interval(0x1p120f, 0x1.fffffep127f, 1 << 16), "largest");
    // The floats nearest to multiples of pi/2 (|r| down to 2^-29.2; found by scanning every
    // float with the C library's sincos), where the reduction cancels the most, and neighbours.
    std::vector<float> hard;
    for (float x :
         {0x1.f37c8ap+95f, 0x1.47d0fep+34f, 0x1.f9cbe2p+7f, 0x1.32ede2p+85f, 0x1.628d4cp+40f,
          0x1.13093p+76f, 0x1.b08c4ap+111f, 0x1.921fb6p+0f, 0x1.2d97c8p+2f, 0x1.7f4134p+101f}) {
      for (int d = -64; d <= 64; ++d) {
        hard.push_back(from_bits(to_bits(x) + d));
        hard.push_back(-from_bits(to_bits(x) + d));
      }
    }
    expect_within_bound(c, hard, "near multiples of pi/2");
  }
}

TEST_F(VectorMathTest, SinCosSpecialValues) {
  EXPECT_EQ(to_bits(sf_sin(0.0f)), to_bits(0.0f));
  EXPECT_EQ(to_bits(sf_sin(-0.0f)), to_bits(-0.0f));
  EXPECT_EQ(to_bits(sf_sin(-0x1p-149f)), to_bits(-0x1p-149f));
  EXPECT_EQ(sf_sin(0x1p-20f), 0x1p-20f);
  EXPECT_EQ(sf_cos(0.0f), 1.0f);
  EXPECT_EQ(sf_cos(-0.0f), 1.0f);
  EXPECT_EQ(sf_cos(0x1p-149f), 1.0f);
  for (float x : {kInf, -kInf, kNan}) {
    EXPECT_TRUE(std::isnan(sf_sin(x))) << x;
    EXPECT_TRUE(std::isnan(sf_cos(x))) << x;
  }
  EXPECT_EQ(sf_sin(0x1.921fb6p+0f), 1.0f);
  EXPECT_EQ(sf_cos(0x1.921fb6p+0f), -0x1.777a5cp-25f);
  EXPECT_EQ(sf_sin(0x1.921fb6p+1f), -0x1.777a5cp-24f);
  EXPECT_EQ(sf_sin(0x1.fffffep127f), -0x1.0b3366p-1f);  // std::sin in double, rounded
  EXPECT_EQ(sf_cos(0x1.fffffep127f), 0x1.b4bf2cp-1f);
  EXPECT_EQ(sf_sin(-0x1.fffffep127f), 0x1.0b3366p-1f);
}

TEST_F(VectorMathTest, TanhErfSigmoidCriticalIntervals) {
  const Case& tanh = find("tanh");
  expect_within_bound(tanh, interval(-1.0f, 1.0f, 1 << 20), "[-1, 1]");
  expect_within_bound(tanh, interval(0x1p-149f, 0x1p-10f, 1 << 16), "tiny");
  expect_within_bound(tanh, interval(8.0f, 10.0f, 1 << 16), "saturation");
  const Case& erf = find("erf");
  expect_within_bound(erf, interval(-4.5f, 4.5f, 1 << 21), "[-4.5, 4.5]");
  expect_within_bound(erf, interval(0x1p-149f, 0x1p-10f, 1 << 16), "tiny");
  const Case& sig = find("sigmoid");
  expect_within_bound(sig, interval(-104.0f, -80.0f, 1 << 20), "denormal results");
  expect_within_bound(sig, interval(-20.0f, 20.0f, 1 << 20), "[-20, 20]");
  expect_within_bound(sig, interval(15.0f, 20.0f, 1 << 16), "saturation");
}

TEST_F(VectorMathTest, TanhErfSigmoidSpecialValues) {
  for (Unary f : {Unary{sf_tanh}, Unary{sf_erf}}) {
    EXPECT_EQ(to_bits(f(0.0f)), to_bits(0.0f));
    EXPECT_EQ(to_bits(f(-0.0f)), to_bits(-0.0f));
    EXPECT_EQ(f(kInf), 1.0f);
    EXPECT_EQ(f(-kInf), -1.0f);
    EXPECT_EQ(f(1e30f), 1.0f);
    EXPECT_EQ(f(-1e30f), -1.0f);
    EXPECT_TRUE(std::isnan(f(kNan)));
  }
  EXPECT_EQ(to_bits(sf_tanh(-0x1p-149f)), to_bits(-0x1p-149f));
  EXPECT_EQ(sf_tanh(0x1.205966p+3f), 0x1.fffffep-1f);  // last result below 1
  EXPECT_EQ(sf_tanh(0x1.205968p+3f), 1.0f);
  EXPECT_EQ(sf_erf(0x1p-149f), 0x1p-149f);  // 2/sqrt(pi) * 2^-149 rounds back to 2^-149
  EXPECT_EQ(sf_erf(0x1p-147f), 0x1.4p-147f);
  EXPECT_EQ(sf_erf(3.9f), 0x1.fffffep-1f);  // erfc(3.9) = 3.5e-8, above half an ulp of 1
  EXPECT_EQ(sf_erf(3.95f), 1.0f);
  EXPECT_EQ(sf_sigmoid(0.0f), 0.5f);
  EXPECT_EQ(sf_sigmoid(-0.0f), 0.5f);
  EXPECT_EQ(sf_sigmoid(kInf), 1.0f);
  EXPECT_EQ(to_bits(sf_sigmoid(-kInf)), 0u);
  EXPECT_EQ(sf_sigmoid(100.0f), 1.0f);
  EXPECT_EQ(sf_sigmoid(-100.0f), 0x1.b0p-145f);  // 3.72e-44, a denormal
  EXPECT_EQ(to_bits(sf_sigmoid(-110.0f)), 0u);
  EXPECT_EQ(sf_sigmoid(-0x1p-149f), 0.5f);
  EXPECT_TRUE(std::isnan(sf_sigmoid(kNan)));
}

// pow against glibc's (C99 Annex F) on a grid of special and ordinary values: equal bits for
// exact results (zeros, infinities, 1, NaN-ness), within bound otherwise.
TEST_F(VectorMathTest, PowSpecialGrid) {
  std::vector<float> v = {0.0f, -0.0f, kInf, -kInf, kNan, 1.0f, -1.0f, 0.5f, -0.5f, 0.1f};
  // Integers, odd and even, around where floats stop having a units bit.
  for (float f : {2.0f, 3.0f, 10.0f, 127.0f, 149.0f, 150.0f, 0x1p23f, 0x1.000002p23f, 0x1p24f}) {
    v.push_back(f);
    v.push_back(-f);
  }
  // Non-integers, denormals and the extremes.
  for (float f :
       {1.5f, 0.25f, 1e-45f, 0x1p-126f, 1e38f, 0x1.fffffep127f, 0x1.fffffep-1f, 0x1.000002p+0f}) {
    v.push_back(f);
    v.push_back(-f);
  }
  for (float x : v) {
    for (float y : v) {
      float got = sf_pow(x, y);
      double ref = std::pow(static_cast<double>(x), static_cast<double>(y));
      double err = ulp_error(got, ref);
      EXPECT_LE(err, 0.501) << "pow(" << std::hexfloat << x << ", " << y << ") = " << got
                            << ", want " << ref;
    }
  }
}

TEST_F(VectorMathTest, PowC99Rules) {
  // pow(x, ±0) = 1 and pow(1, y) = 1 for any x, y, NaN included.
  for (float x : {kNan, -kNan, kInf, -kInf, 0.0f, -0.0f, -3.5f}) {
    EXPECT_EQ(sf_pow(x, 0.0f), 1.0f) << x;
    EXPECT_EQ(sf_pow(x, -0.0f), 1.0f) << x;
  }
  for (float y : {kNan, kInf, -kInf, 0.5f, -7.0f}) EXPECT_EQ(sf_pow(1.0f, y), 1.0f) << y;
  EXPECT_EQ(sf_pow(-1.0f, kInf), 1.0f);
  EXPECT_EQ(sf_pow(-1.0f, -kInf), 1.0f);
  EXPECT_TRUE(std::isnan(sf_pow(-1.0f, kNan)));
  EXPECT_TRUE(std::isnan(sf_pow(kNan, 1.0f)));
  EXPECT_TRUE(std::isnan(sf_pow(2.0f, kNan)));
  // A negative finite base with a non-integer exponent.
  EXPECT_TRUE(std::isnan(sf_pow(-2.0f, 0.5f)));
  EXPECT_TRUE(std::isnan(sf_pow(-0x1p-149f, 1.5f)));
  // Odd integer exponents keep the sign; even ones and large ones (all even) do not.
  EXPECT_EQ(sf_pow(-2.0f, 3.0f), -8.0f);
  EXPECT_EQ(sf_pow(-2.0f, -3.0f), -0.125f);
  EXPECT_EQ(sf_pow(-2.0f, 2.0f), 4.0f);
  EXPECT_EQ(sf_pow(-1.0f, 0x1.000002p23f), -1.0f);  // 2^23 + 1 is odd
  EXPECT_EQ(sf_pow(-1.0f, 0x1p24f), 1.0f);
  EXPECT_EQ(sf_pow(-1.0f, 0x1.fffffep127f), 1.0f);
  // Zeros.
  EXPECT_EQ(to_bits(sf_pow(-0.0f, 3.0f)), to_bits(-0.0f));
  EXPECT_EQ(to_bits(sf_pow(-0.0f, 2.0f)), to_bits(0.0f));
  EXPECT_EQ(to_bits(sf_pow(-0.0f, 0.5f)), to_bits(0.0f));
  EXPECT_EQ(sf_pow(-0.0f, -3.0f), -kInf);
  EXPECT_EQ(sf_pow(-0.0f, -2.0f), kInf);
  EXPECT_EQ(sf_pow(0.0f, -0.5f), kInf);
  EXPECT_EQ(sf_pow(0.0f, -kInf), kInf);
  EXPECT_EQ(to_bits(sf_pow(0.0f, kInf)), 0u);
  // Infinite exponents.
  EXPECT_EQ(to_bits(sf_pow(0.5f, kInf)), 0u);
  EXPECT_EQ(sf_pow(-0.5f, -kInf), kInf);
  EXPECT_EQ(sf_pow(2.0f, kInf), kInf);
  EXPECT_EQ(to_bits(sf_pow(-2.0f, -kInf)), 0u);
  // Infinite bases.
  EXPECT_EQ(sf_pow(-kInf, 3.0f), -kInf);
  EXPECT_EQ(sf_pow(-kInf, 2.0f), kInf);
  EXPECT_EQ(sf_pow(-kInf, 0.5f), kInf);
  EXPECT_EQ(to_bits(sf_pow(-kInf, -3.0f)), to_bits(-0.0f));
  EXPECT_EQ(to_bits(sf_pow(-kInf, -2.0f)), 0u);
  EXPECT_EQ(to_bits(sf_pow(kInf, -0.5f)), 0u);
  // Overflow, underflow and denormals.
  EXPECT_EQ(sf_pow(2.0f, 128.0f), kInf);
  EXPECT_EQ(sf_pow(-2.0f, 129.0f), -kInf);
  EXPECT_EQ(sf_pow(2.0f, -149.0f), 0x1p-149f);
  EXPECT_EQ(to_bits(sf_pow(2.0f, -151.0f)), 0u);
  EXPECT_EQ(sf_pow(-2.0f, -149.0f), -0x1p-149f);
  EXPECT_EQ(sf_pow(0x1p-149f, 1.0f), 0x1p-149f);
  EXPECT_EQ(sf_pow(0x1p-149f, 0.5f), 0x1.6a09e6p-75f);
  // Exact results.
  EXPECT_EQ(sf_pow(2.0f, 10.0f), 1024.0f);
  EXPECT_EQ(sf_pow(9.0f, 0.5f), 3.0f);
  EXPECT_EQ(sf_pow(10.0f, 7.0f), 1e7f);
  EXPECT_EQ(sf_pow(0.5f, -3.0f), 8.0f);
}

// Random pairs: fully random bit patterns, and pairs whose result lands in the float range
// (where the error is visible), with integer exponents for negative bases.
TEST_F(VectorMathTest, PowRandomPairsWithinBound) {
  std::mt19937_64 rng(2024);
  const size_t n = 1 << 20;
  std::vector<float> xs(n), ys(n), out(n);
  for (size_t i = 0; i < n; ++i) {
    uint64_t r = rng();
    float x = from_bits(static_cast<uint32_t>(r)), y = from_bits(static_cast<uint32_t>(r >> 32));
    if (i % 4 != 0) {
      uint32_t e = 127 - 40 + static_cast<uint32_t>(rng() % 81);
      if (i % 16 < 4) e = 126 + (rng() & 1);  // x near 1
      uint32_t sign = (i % 8 == 1) ? 0x80000000u : 0u;
      x = from_bits(sign | (e << 23) | (static_cast<uint32_t>(r) & 0x7fffffu));
      double l = std::fabs(std::log2(std::fabs(static_cast<double>(x))));
      double lim = std::min(l > 0 ? 160.0 / l : 3e38, 3e38);
      double u = std::ldexp(static_cast<double>(rng() >> 11), -53) * 2.0 - 1.0;
      y = static_cast<float>(u * lim);
      if (sign || i % 16 == 5) y = std::nearbyint(y);
    }
    xs[i] = x;
    ys[i] = y;
  }
  for (size_t i = 0; i < n; ++i) out[i] = sf_pow(xs[i], ys[i]);
  double worst = 0.0;
  size_t at = 0, mismatches = 0;
  for (size_t i = 0; i < n; ++i) {
    double err = ulp_error(out[i], std::pow(static_cast<double>(xs[i]), ys[i]));
    if (err == kMismatch) {
      ++mismatches;
    } else if (err > worst) {
      worst = err;
      at = i;
    }
  }
  EXPECT_EQ(mismatches, 0u);
  EXPECT_LE(worst, 0.501) << "pow(" << std::hexfloat << xs[at] << ", " << ys[at] << ")";
}

// The test can tell a broken function from a good one: a slightly wrong exp (one ulp-level
// perturbation of the result) must exceed the bound somewhere in the sweep.
TEST_F(VectorMathTest, BoundIsTightEnoughToCatchAnOffByOneUlp) {
  std::vector<float> in = interval(-10.0f, 10.0f, 1 << 18);
  std::vector<float> out(in.size());
  apply<sf_exp>(in.data(), out.data(), in.size());
  double worst = 0.0;
  for (size_t i = 0; i < in.size(); ++i) {
    float bumped = from_bits(to_bits(out[i]) + 1);
    worst = std::max(worst, ulp_error(bumped, std::exp(static_cast<double>(in[i]))));
  }
  EXPECT_GT(worst, find("exp").fn.bound);
}

}  // namespace
