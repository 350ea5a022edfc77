// The reduction template (core/reduce_math.h) against a plain model of the order it documents,
// and its three ways of folding a contiguous run against each other: sf_reduce_run (eager),
// sf_reduce_fold fed in pieces (fused kernels and the interpreter), sf_reduce_lane per lane
// (CUDA); and the max and min they fold with. Kernels are compared with each other elsewhere;
// here the template itself, compiled once per ISA level with the kernel flags (STREAMFUSE_ISA:
// the template's vector code depends on it).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/scalar_ops.h"
// Prelude text: it includes nothing and needs core/scalar_ops.h before it.
#include "core/reduce_math.h"
#include "tests/isa_variant.h"

namespace {

[[maybe_unused]] ::testing::Environment* const kIsaCheck =
    ::testing::AddGlobalTestEnvironment(new streamfuse::testing::IsaEnvironment);

constexpr int kLanes = SF_REDUCE_LANES;
constexpr int kRounds = SF_REDUCE_PART_ROUNDS;

// The documented order of a float sum of one contiguous run, written out: lanes of elements
// l, l + 16, ... below the lane span, each adding 8 of its elements at a time in float from 0
// and that part into a double; lanes merged in order; the rest in double, in order.
double model_sum(const std::vector<float>& x) {
  const std::int64_t n = static_cast<std::int64_t>(x.size());
  const std::int64_t span = n >= 4 * kLanes ? n / kLanes * kLanes : 0;
  double a = 0.0;
  if (span > 0) {
    const std::int64_t rounds = span / kLanes;
    for (int l = 0; l < kLanes; ++l) {
      double lane = 0.0;
      for (std::int64_t r0 = 0; r0 < rounds; r0 += kRounds) {
        float part = 0.0f;
        for (std::int64_t r = r0; r < rounds && r < r0 + kRounds; ++r) part += x[r * kLanes + l];
        lane += static_cast<double>(part);
      }
      a += lane;
    }
  }
  for (std::int64_t i = span; i < n; ++i) a += static_cast<double>(x[i]);
  return a;
}

template <class Op, class T>
typename Op::acc run_of(const std::vector<T>& x, int contiguous) {
  const T* p = x.data();
  return sf_reduce_run<Op>([p](long long i) { return (typename Op::value)p[i]; }, 0,
                           static_cast<long long>(x.size()), contiguous, 0, Op::identity());
}

// x folded through sf_reduce_fold in pieces of random lengths (1 to max_piece).
template <class Op, class T>
typename Op::acc fold_in_pieces(const std::vector<T>& x, int contiguous, std::mt19937& rng,
                                long long max_piece) {
  sf_reduce_fold<Op> f;
  const long long n = static_cast<long long>(x.size());
  f.begin(contiguous, n, 0);
  std::uniform_int_distribution<long long> len(1, max_piece);
  for (long long at = 0; at < n;) {
    const long long m = std::min(len(rng), n - at);
    const T* p = x.data() + at;
    f.push([p](long long i) { return (typename Op::value)p[i]; }, m);
    at += m;
  }
  return f.result();
}

// The run's lanes one by one (sf_reduce_lane), merged in order, then the tail: as CUDA folds.
template <class Op, class T>
typename Op::acc by_lanes(const std::vector<T>& x) {
  const T* p = x.data();
  const auto load = [p](long long i) { return (typename Op::value)p[i]; };
  const long long n = static_cast<long long>(x.size());
  const long long span = sf_reduce_lane_span(1, n);
  typename Op::acc a = Op::identity();
  if (span > 0)
    for (int l = 0; l < kLanes; ++l) a = Op::merge(a, sf_reduce_lane<Op>(load, 0, span, 0, l));
  return sf_reduce_tail<Op>(load, 0, span, n, 0, a);
}

// Lengths around every boundary the order has: the lane threshold (64), a round (16), a part
// (8 rounds: 128 elements), and long runs with odd tails. Constant-initialized: a dynamic
// initializer is compiled for this binary's ISA level and runs before IsaEnvironment can skip
// (a std::vector here was an illegal instruction on a CPU without AVX-512, at test discovery).
constexpr long long kLengths[] = {0,   1,   15,  16,  63,  64,  65,   79,   127,  128,
                                  129, 143, 255, 256, 257, 300, 1000, 2048, 4099, 20011};

std::vector<float> random_floats(long long n, std::mt19937& rng) {
  // Magnitudes over 2^-30 .. 2^30 with both signs: sums that cancel and lose low bits.
  std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exp(-30, 30);
  std::vector<float> x(static_cast<std::size_t>(n));
  for (float& v : x) v = std::ldexp(mant(rng), exp(rng));
  return x;
}

TEST(ReduceMathTest, AFloatSumFollowsTheDocumentedOrder) {
  std::mt19937 rng(7);
  for (long long n : kLengths) {
    const std::vector<float> x = random_floats(n, rng);
    EXPECT_EQ(std::bit_cast<std::uint64_t>(run_of<sf_sum_float>(x, 1)),
              std::bit_cast<std::uint64_t>(model_sum(x)))
        << "n = " << n;
  }
}

// The model is not the plain double sum: a part of 8 floats rounds (1 + 2^-24 is 1 in float),
// so a run whose small elements only survive in double tells the two apart.
TEST(ReduceMathTest, LanesAddTheirPartsInFloat) {
  std::vector<float> x(256, 0x1p-24f);
  for (int l = 0; l < kLanes; ++l) x[l] = 1.0f;  // each lane's first element
  const double got = run_of<sf_sum_float>(x, 1);
  EXPECT_EQ(got, 16.0 + 16 * 8 * 0x1p-24) << "the first part of each lane keeps only its 1";
  double in_double = 0;
  for (float v : x) in_double += v;
  EXPECT_NE(got, in_double);
}

TEST(ReduceMathTest, AFloatSumStaysWithinItsBound) {
  std::mt19937 rng(11);
  for (long long n : {64LL, 1000LL, 65536LL}) {
    const std::vector<float> x = random_floats(n, rng);
    long double exact = 0, magnitude = 0;
    for (float v : x) {
      exact += v;
      magnitude += std::fabs(v);
    }
    // Parts of 8 floats: 7 roundings of at most 2^-24 of what they have summed so far.
    const long double bound = (kRounds - 1) * 0x1p-24L * magnitude + 1e-30L;
    EXPECT_LE(std::fabs(static_cast<long double>(run_of<sf_sum_float>(x, 1)) - exact), bound)
        << "n = " << n;
  }
}

TEST(ReduceMathTest, PiecesAndLanesFoldAsTheRunDoes) {
  std::mt19937 rng(3);
  for (long long n : kLengths) {
    const std::vector<float> x = random_floats(n, rng);
    for (int contiguous : {0, 1}) {
      const double run = run_of<sf_sum_float>(x, contiguous);
      for (long long max_piece : {1LL, 7LL, 16LL, 300LL, 5000LL})
        EXPECT_EQ(std::bit_cast<std::uint64_t>(
                      fold_in_pieces<sf_sum_float>(x, contiguous, rng, max_piece)),
                  std::bit_cast<std::uint64_t>(run))
            << "sum, n = " << n << ", contiguous " << contiguous << ", pieces <= " << max_piece;
      const auto am = run_of<sf_argmax_float>(x, contiguous);
      const auto am_f = fold_in_pieces<sf_argmax_float>(x, contiguous, rng, 37);
      EXPECT_EQ(am_f.index, am.index) << "argmax, n = " << n;
      const float mx = run_of<sf_extreme_float<1>>(x, contiguous);
      EXPECT_EQ(
          std::bit_cast<std::uint32_t>(fold_in_pieces<sf_extreme_float<1>>(x, contiguous, rng, 37)),
          std::bit_cast<std::uint32_t>(mx))
          << "max, n = " << n;
    }
    EXPECT_EQ(std::bit_cast<std::uint64_t>(by_lanes<sf_sum_float>(x)),
              std::bit_cast<std::uint64_t>(run_of<sf_sum_float>(x, 1)))
        << "lanes, n = " << n;
    EXPECT_EQ(by_lanes<sf_argmax_float>(x).index, run_of<sf_argmax_float>(x, 1).index);
  }
}

// sf_max / sf_min (core/scalar_ops.h) as their comment specifies them: a NaN wins (the first
// operand's if both are), +0 is above -0, otherwise the larger (smaller) value; on the bits.
float reference_extreme(float a, float b, bool want_max) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  if (a == b) {  // equal: +0 and -0 differ only in sign
    const bool a_neg = std::signbit(a);
    return want_max ? (a_neg ? b : a) : (a_neg ? a : b);
  }
  return (want_max ? a > b : a < b) ? a : b;
}

TEST(ReduceMathTest, MaxAndMinLetNaNWinAndOrderSignedZeros) {
  std::vector<float> special = {0.0f,      -0.0f,           1.0f,
                                -1.0f,     0x1p-149f,       -0x1p-149f,
                                0x1p-126f, 0x1.fffffep127f, -0x1.fffffep127f,
                                INFINITY,  -INFINITY};
  for (std::uint32_t nan : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xffbfffffu})
    special.push_back(std::bit_cast<float>(nan));
  std::vector<std::pair<float, float>> pairs;
  for (float a : special)
    for (float b : special) pairs.emplace_back(a, b);
  std::mt19937 rng(13);
  for (int i = 0; i < 200000; ++i)
    pairs.emplace_back(std::bit_cast<float>(static_cast<std::uint32_t>(rng())),
                       std::bit_cast<float>(static_cast<std::uint32_t>(rng())));
  for (const auto& [a, b] : pairs) {
    ASSERT_EQ(std::bit_cast<std::uint32_t>(sf_max(a, b)),
              std::bit_cast<std::uint32_t>(reference_extreme(a, b, true)))
        << "max(" << a << ", " << b << ")";
    ASSERT_EQ(std::bit_cast<std::uint32_t>(sf_min(a, b)),
              std::bit_cast<std::uint32_t>(reference_extreme(a, b, false)))
        << "min(" << a << ", " << b << ")";
  }
}

// The CPU's any-order fold of float max and min (on integer keys) against sf_max / sf_min folded
// in order: the same bits without a NaN; with one, a NaN of the run. Rows mix signed zeros,
// infinities, subnormals and random bits, some all of one sign, of every length up to beyond
// the fold's two vectors of lanes.
TEST(ReduceMathTest, AnyOrderMaxAndMinEqualTheFoldInOrder) {
  const std::vector<float> special = {
      0.0f,      -0.0f, 0x1p-149f, -0x1p-149f,      INFINITY,
      -INFINITY, 1.5f,  -1.5f,     0x1.fffffep127f, -0x1.fffffep127f};
  const std::vector<float> nans = {std::bit_cast<float>(0x7fc00000u),
                                   std::bit_cast<float>(0xffc00001u),
                                   std::bit_cast<float>(0x7f800001u)};
  std::mt19937 rng(29);
  for (int trial = 0; trial < 4000; ++trial) {
    const long long n = trial < 200 ? 1 + trial : 1 + static_cast<long long>(rng() % 1100);
    const int sign = static_cast<int>(rng() % 3);  // 0 mixed, 1 all >= +0, 2 all <= -0
    const bool with_nan = rng() % 4 == 0;
    std::vector<float> x(n);
    for (float& v : x) {
      v = rng() % 3 == 0 ? special[rng() % special.size()]
                         : std::bit_cast<float>(static_cast<std::uint32_t>(rng()) & 0xbf7fffffu);
      if (sign) v = std::copysign(v, sign == 1 ? 1.0f : -1.0f);
    }
    if (with_nan) x[rng() % n] = nans[rng() % nans.size()];
    const auto load = [&](long long i) { return x[i]; };
    for (const bool want_max : {true, false}) {
      const float got = want_max ? sf_reduce_any_order<sf_extreme_float<1>>(load, 0, n)
                                 : sf_reduce_any_order<sf_extreme_float<0>>(load, 0, n);
      float in_order = want_max ? -INFINITY : INFINITY;
      for (float v : x) in_order = reference_extreme(in_order, v, want_max);
      if (with_nan) {
        ASSERT_TRUE(std::isnan(got)) << "trial " << trial;
        bool from_run = false;
        for (float v : x)
          from_run |= std::bit_cast<std::uint32_t>(v) == std::bit_cast<std::uint32_t>(got);
        ASSERT_TRUE(from_run) << "trial " << trial;
      } else {
        ASSERT_EQ(std::bit_cast<std::uint32_t>(got), std::bit_cast<std::uint32_t>(in_order))
            << (want_max ? "max" : "min") << " of " << n << " elements, trial " << trial;
      }
    }
  }
}

}  // namespace

namespace {

// A block's fold of an array (sf_reduce_contiguous: float max and min as vectors of keys on the
// CPU) against the same elements pushed to sf_reduce_fold in one piece: the same bits, NaNs
// included, for every length around the vectors' edges (16 and 32 keys) and every alignment.
// A sum and an integer max go through the fold itself.
TEST(ReduceMathTest, AnArrayFoldsAsItsElementsPushedInOnePiece) {
  const std::vector<float> special = {
      0.0f, -0.0f, 0x1p-149f, -0x1p-149f,      INFINITY,        -INFINITY,
      1.5f, -1.5f, 0x1p-126f, 0x1.fffffep127f, -0x1.fffffep127f};
  const std::vector<float> nans = {std::bit_cast<float>(0x7fc00000u),
                                   std::bit_cast<float>(0xffc00001u),
                                   std::bit_cast<float>(0x7f800001u)};
  const auto bits_equal = [](auto a, auto b) { return std::memcmp(&a, &b, sizeof(a)) == 0; };
  std::mt19937 rng(31);
  std::vector<float> storage(2200);
  for (int trial = 0; trial < 6000; ++trial) {
    const long long n = trial < 300 ? trial % 150 : 1 + static_cast<long long>(rng() % 2048);
    const std::size_t offset = rng() % 16;
    float* x = storage.data() + offset;
    const int sign = static_cast<int>(rng() % 3);  // 0 mixed, 1 all >= +0, 2 all <= -0
    for (long long i = 0; i < n; ++i) {
      float v = rng() % 3 == 0
                    ? special[rng() % special.size()]
                    : std::bit_cast<float>(static_cast<std::uint32_t>(rng()) & 0xbf7fffffu);
      if (sign) v = std::copysign(v, sign == 1 ? 1.0f : -1.0f);
      x[i] = v;
    }
    if (n > 0 && rng() % 4 == 0) x[rng() % n] = nans[rng() % nans.size()];
    const auto in_one_piece = [&](auto op) {
      using Op = decltype(op);
      sf_reduce_fold<Op> f;
      f.begin(1, n, 0);
      f.push([&](long long i) -> typename Op::value { return x[i]; }, n);
      return f.result();
    };
    SCOPED_TRACE("trial " + std::to_string(trial) + ", " + std::to_string(n) + " elements");
    ASSERT_TRUE(bits_equal(sf_reduce_contiguous<sf_extreme_float<1>>(x, n, 1, 0),
                           in_one_piece(sf_extreme_float<1>())));
    ASSERT_TRUE(bits_equal(sf_reduce_contiguous<sf_extreme_float<0>>(x, n, 1, 0),
                           in_one_piece(sf_extreme_float<0>())));
    ASSERT_TRUE(
        bits_equal(sf_reduce_contiguous<sf_sum_float>(x, n, 1, 0), in_one_piece(sf_sum_float())));
    ASSERT_TRUE(bits_equal(sf_reduce_contiguous<sf_sum_float>(x, n, 0, 0), [&] {
      sf_reduce_fold<sf_sum_float> f;
      f.begin(0, n, 0);
      f.push([&](long long i) { return x[i]; }, n);
      return f.result();
    }()));
  }
  std::vector<int> ints(300);
  for (int& v : ints) v = static_cast<int>(rng());
  for (long long n : {0LL, 1LL, 17LL, 64LL, 300LL}) {
    sf_reduce_fold<sf_extreme_int<int, 1>> f;
    f.begin(1, n, 0);
    f.push([&](long long i) { return ints[static_cast<std::size_t>(i)]; }, n);
    EXPECT_EQ((sf_reduce_contiguous<sf_extreme_int<int, 1>>(ints.data(), n, 1, 0)), f.result());
  }
}

}  // namespace
