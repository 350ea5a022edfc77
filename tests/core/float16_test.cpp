// Float <-> f16/bf16 conversions: exhaustive round trips and round-to-nearest-even.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>

#include "core/float16.h"

namespace core = streamfuse::core;

namespace {

// binary16 value of bits h, computed independently of the code under test.
double half_value(std::uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  const double sign = (h & 0x8000) ? -1 : 1;
  if (e == 0) return sign * std::ldexp(m, -24);
  if (e == 31) return m ? NAN : sign * INFINITY;
  return sign * std::ldexp(1024 + m, e - 25);
}

TEST(Float16Test, EveryHalfConvertsToFloatExactlyAndBack) {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    const float f = core::half_bits_to_float(bits);
    const double want = half_value(bits);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(f));
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), want) << std::hex << h;
    ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0);
    ASSERT_EQ(core::float_to_half_bits(f), bits) << std::hex << h;
  }
}

TEST(Float16Test, FloatToHalfRoundsToNearestEven) {
  // Every float between two neighbouring halves, exhaustively over a sample of exponents:
  // the result must be the nearer half, ties to even mantissa.
  for (std::uint32_t fbits = 0; fbits < 0x7f800000u; fbits += 4093) {
    const float f = std::bit_cast<float>(fbits);
    const std::uint16_t h = core::float_to_half_bits(f);
    const double v = half_value(h);
    if (std::isinf(v)) {
      ASSERT_GE(f, 65520.0f);
      continue;
    }
    const double up = half_value(static_cast<std::uint16_t>(h + 1));
    const double down = h ? half_value(static_cast<std::uint16_t>(h - 1)) : -half_value(1);
    const double err = std::fabs(f - v);
    ASSERT_LE(err, std::fabs(f - up)) << f;
    ASSERT_LE(err, std::fabs(f - down)) << f;
    if (err == std::fabs(f - up) || err == std::fabs(f - down)) {
      ASSERT_EQ(h & 1, 0) << "tie to even " << f;
    }
  }
  EXPECT_EQ(core::float_to_half_bits(65519.0f), 0x7bffu);
  EXPECT_EQ(core::float_to_half_bits(65520.0f), 0x7c00u) << "rounds to infinity";
  EXPECT_EQ(core::float_to_half_bits(NAN) & 0x7e00u, 0x7e00u);
  EXPECT_EQ(core::float_to_half_bits(-0.0f), 0x8000u);
}

TEST(Float16Test, BFloat16RoundsToNearestEvenAndKeepsNaN) {
  EXPECT_EQ(core::float_to_bf16_bits(1.0f), 0x3f80u);
  EXPECT_EQ(core::float_to_bf16_bits(std::bit_cast<float>(0x3f808000u)), 0x3f80u) << "tie to even";
  EXPECT_EQ(core::float_to_bf16_bits(std::bit_cast<float>(0x3f818000u)), 0x3f82u)
      << "tie to even (up)";
  EXPECT_EQ(core::float_to_bf16_bits(std::bit_cast<float>(0x3f808001u)), 0x3f81u);
  EXPECT_TRUE(std::isnan(
      core::bf16_bits_to_float(core::float_to_bf16_bits(std::bit_cast<float>(0x7f800001u)))))
      << "a NaN with only low payload bits must not become infinity";
  EXPECT_EQ(core::float_to_bf16_bits(3.4e38f), 0x7f80u) << "overflow rounds to infinity";
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const float f = core::bf16_bits_to_float(static_cast<std::uint16_t>(b));
    if (!std::isnan(f)) {
      ASSERT_EQ(core::float_to_bf16_bits(f), b);
    }
  }
}

}  // namespace
