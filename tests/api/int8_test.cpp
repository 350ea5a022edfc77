// i8 and u8 through the API, fusion off and on: arithmetic wraps in the operands' own width (also
// inside a fused kernel, where the values live in int registers and each op's result is wrapped
// before the next op reads it), scalars keep their category, casts from floats truncate, saturate
// at i32 and wrap (core/scalar_ops.h), sums accumulate in i64, products wrap; and values are
// created, read and printed as in the other dtypes. The tables of every op and every cast pair
// are in elementwise_test.cpp, reductions in reduction_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <vector>

#include <streamfuse/streamfuse.h>

#include "tests/fusion_off_and_on.h"

namespace sf = streamfuse;

namespace {

using I8 = std::vector<std::int8_t>;
using U8 = std::vector<std::uint8_t>;

class Int8 : public streamfuse::testing::FusionOffAndOn {};

TEST_P(Int8, ArithmeticWrapsAndTheNextOpReadsTheWrappedValue) {
  const sf::Tensor a = sf::from_vector(I8{100, -128, 127, 50});
  const sf::Tensor b = sf::from_vector(I8{100, -1, 1, 3});
  const sf::Tensor sum = a + b;
  EXPECT_EQ(sum.dtype(), sf::kI8);
  EXPECT_EQ(sum.to_vector<std::int8_t>(), (I8{-56, 127, -128, 53}));
  // In one fused kernel: 100 + 100 is -56 in i8, not 200, when the comparison reads it.
  EXPECT_EQ(((a + b) > 0).to_vector<bool>(), (std::vector<bool>{false, true, false, true}));
  EXPECT_EQ((a * b).to_vector<std::int8_t>(), (I8{16, -128, 127, -106}));
  EXPECT_EQ((a - b - b).to_vector<std::int8_t>(), (I8{-100, -126, 125, 44}));
  // -(-128) and |-128| do not fit: they wrap to -128, as in PyTorch.
  EXPECT_EQ(sf::neg(a).to_vector<std::int8_t>(), (I8{-100, -128, -127, -50}));
  EXPECT_EQ(sf::abs(a).to_vector<std::int8_t>(), (I8{100, -128, 127, 50}));
  EXPECT_EQ(sf::pow(a, 2).to_vector<std::int8_t>(), (I8{16, 0, 1, -60}));
  EXPECT_EQ(sf::maximum(a, b).to_vector<std::int8_t>(), (I8{100, -1, 127, 50}));
  EXPECT_EQ(sf::relu(sf::neg(a)).to_vector<std::int8_t>(), (I8{0, 0, 0, 0}));
  // Division is true division, in f32: -128 / -1 is 128, no trap and no wrap.
  const sf::Tensor q = a / b;
  EXPECT_EQ(q.dtype(), sf::kF32);
  EXPECT_EQ(q.to_vector<float>()[1], 128.0f);

  const sf::Tensor x = sf::from_vector(U8{200, 255, 0, 7});
  const sf::Tensor y = sf::from_vector(U8{100, 1, 1, 250});
  EXPECT_EQ((x + y).to_vector<std::uint8_t>(), (U8{44, 0, 1, 1}));
  EXPECT_EQ((x - y).to_vector<std::uint8_t>(), (U8{100, 254, 255, 13}));
  EXPECT_EQ(((x + y) < 10).to_vector<bool>(), (std::vector<bool>{false, true, true, true}));
  EXPECT_EQ(sf::neg(x).to_vector<std::uint8_t>(), (U8{56, 1, 0, 249}));
  EXPECT_EQ(sf::where(x > y, x, y).to_vector<std::uint8_t>(), (U8{200, 255, 1, 250}));
  // u8 with i8 is i32 (PyTorch: i16), so nothing wraps.
  const sf::Tensor mixed = x + a;
  EXPECT_EQ(mixed.dtype(), sf::kI32);
  EXPECT_EQ(mixed.to_vector<std::int32_t>(), (std::vector<std::int32_t>{300, 127, 127, 57}));
}

TEST_P(Int8, ScalarsKeepTheirCategory) {
  const sf::Tensor x = sf::from_vector(U8{200, 255, 0, 7});
  // An integer scalar keeps u8: the sum wraps (as PyTorch's u8 + 300, which wraps 300 first).
  EXPECT_EQ((x + 300).to_vector<std::uint8_t>(), (U8{244, 43, 44, 51}));
  EXPECT_EQ((x * 2).to_vector<std::uint8_t>(), (U8{144, 254, 0, 14}));
  EXPECT_EQ((1 - x).to_vector<std::uint8_t>(), (U8{57, 2, 1, 250}));
  // Comparisons with a scalar outside the range compare the values exactly.
  EXPECT_EQ((x < 300).to_vector<bool>(), (std::vector<bool>(4, true)));
  EXPECT_EQ((x > -1).to_vector<bool>(), (std::vector<bool>(4, true)));
  // A float scalar lifts to f32.
  const sf::Tensor f = x * 2.5;
  EXPECT_EQ(f.dtype(), sf::kF32);
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{500, 637.5, 0, 17.5}));
  const sf::Tensor i = sf::from_vector(I8{-128, 127});
  EXPECT_EQ((i * -1).to_vector<std::int8_t>(), (I8{-128, -127}));
  EXPECT_EQ((i + true).to_vector<std::int8_t>(), (I8{-127, -128}));
}

TEST_P(Int8, CastsFromFloatTruncateSaturateAtI32AndWrap) {
  const std::vector<float> f = {NAN,    INFINITY, -INFINITY, -0.0f,  0.9f,    -1.5f, 127.9f,
                                128.0f, 255.0f,   256.0f,    300.5f, -129.0f, 1e10f, -1e10f};
  const sf::Tensor x = sf::from_vector(f);
  EXPECT_EQ(x.to(sf::kI8).to_vector<std::int8_t>(),
            (I8{0, -1, 0, 0, 0, -1, 127, -128, -1, 0, 44, 127, -1, 0}));
  EXPECT_EQ(x.to(sf::kU8).to_vector<std::uint8_t>(),
            (U8{0, 255, 0, 0, 0, 255, 127, 128, 255, 0, 44, 127, 255, 0}));
  // Fused into arithmetic: the cast's value is what the next op reads.
  EXPECT_EQ((x.to(sf::kU8) + 1).to_vector<std::uint8_t>(),
            (U8{1, 0, 1, 1, 1, 0, 128, 129, 0, 1, 45, 128, 0, 1}));
  // Between the integer types: wrapping.
  const sf::Tensor i = sf::from_vector(std::vector<std::int64_t>{-1, 255, 256, 10000000000, -129});
  EXPECT_EQ(i.to(sf::kU8).to_vector<std::uint8_t>(), (U8{255, 255, 0, 0, 127}));
  EXPECT_EQ(i.to(sf::kI8).to_vector<std::int8_t>(), (I8{-1, -1, 0, 0, 127}));
  EXPECT_EQ(sf::from_vector(U8{200, 128}).to(sf::kI8).to_vector<std::int8_t>(), (I8{-56, -128}));
  EXPECT_EQ(sf::from_vector(I8{-1, 5}).to(sf::kU8).to_vector<std::uint8_t>(), (U8{255, 5}));
  // Every value out to float, exactly, and to bool.
  std::vector<std::int8_t> all;
  for (int v = -128; v < 128; ++v) all.push_back(static_cast<std::int8_t>(v));
  const std::vector<float> back = sf::from_vector(all).to(sf::kF16).to(sf::kF32).to_vector<float>();
  for (std::size_t k = 0; k < all.size(); ++k) ASSERT_EQ(back[k], all[k]);
  EXPECT_EQ(sf::from_vector(U8{0, 1, 255}).to(sf::kBool).to_vector<bool>(),
            (std::vector<bool>{false, true, true}));
}

TEST_P(Int8, ReductionsAccumulateInI64) {
  const sf::Tensor x = sf::full({4, 1000}, 255, sf::kU8);
  const sf::Tensor s = sf::sum(x, 1);
  EXPECT_EQ(s.dtype(), sf::kI64);
  EXPECT_EQ(s.to_vector<std::int64_t>(), (std::vector<std::int64_t>(4, 255000)));
  EXPECT_EQ(sf::sum(x).item<std::int64_t>(), 1020000);
  EXPECT_EQ(sf::mean(x).dtype(), sf::kF32);
  EXPECT_EQ(sf::mean(x).item<float>(), 255.0f);
  EXPECT_EQ(sf::max(x, 1).dtype(), sf::kU8);
  // Each element wraps (255 * 2 is 254) before the sum reads it, in one fused kernel too.
  EXPECT_EQ(sf::sum(x * 2, 1).to_vector<std::int64_t>(), (std::vector<std::int64_t>(4, 254000)));
  const sf::Tensor c = sf::cumsum(sf::full({300}, -128, sf::kI8), 0);
  EXPECT_EQ(c.dtype(), sf::kI64);
  EXPECT_EQ(c.to_vector<std::int64_t>().back(), -38400);
  const sf::Tensor v = sf::from_vector(I8{3, -128, 127, 127, -1});
  EXPECT_EQ(sf::max(v).item<std::int8_t>(), 127);
  EXPECT_EQ(sf::min(v).item<std::int8_t>(), -128);
  EXPECT_EQ(sf::argmax(v).item<std::int64_t>(), 2);
  EXPECT_EQ(sf::sum(v + v).item<std::int64_t>(), 6 + 0 - 2 - 2 - 2);  // -256 and 254 wrap
  EXPECT_EQ(sf::argsort(v, 0).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{1, 4, 0, 2, 3}));
}

TEST_P(Int8, MatmulWrapsTo8Bits) {
  std::mt19937 rng(3);
  const std::int64_t m = 5, k = 70, n = 9;
  for (sf::DType d : {sf::kI8, sf::kU8}) {
    std::vector<std::int64_t> av(static_cast<std::size_t>(m * k)),
        bv(static_cast<std::size_t>(k * n));
    for (auto& v : av) v = static_cast<std::int64_t>(rng() % 256) - (d == sf::kI8 ? 128 : 0);
    for (auto& v : bv) v = static_cast<std::int64_t>(rng() % 256) - (d == sf::kI8 ? 128 : 0);
    const sf::Tensor a = sf::from_vector(av, {m, k}).to(d), b = sf::from_vector(bv, {k, n}).to(d);
    const sf::Tensor p = sf::matmul(a, b);
    ASSERT_EQ(p.dtype(), d);
    const std::vector<std::int32_t> got = p.to(sf::kI32).to_vector<std::int32_t>();
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        std::int64_t acc = 0;
        for (std::int64_t q = 0; q < k; ++q)
          acc += av[static_cast<std::size_t>(i * k + q)] * bv[static_cast<std::size_t>(q * n + j)];
        const std::int64_t want =
            d == sf::kU8 ? (acc & 0xff) : static_cast<std::int8_t>(static_cast<std::uint8_t>(acc));
        ASSERT_EQ(got[static_cast<std::size_t>(i * n + j)], want) << sf::dtype_name(d);
      }
  }
}

STREAMFUSE_FUSION_OFF_AND_ON(Int8);

TEST(Int8Values, CreatedReadAndPrinted) {
  EXPECT_EQ(sf::full({3}, 300, sf::kU8).to_vector<std::uint8_t>(), (U8{44, 44, 44}));
  EXPECT_EQ(sf::full({2}, -1, sf::kU8).to_vector<std::uint8_t>(), (U8{255, 255}));
  EXPECT_EQ(sf::full({2}, 2.9, sf::kI8).to_vector<std::int8_t>(), (I8{2, 2}));
  EXPECT_EQ(sf::full({1}, 300.5, sf::kI8).to_vector<std::int8_t>(), (I8{44}));
  EXPECT_EQ(sf::zeros({2}, sf::kI8).to_vector<std::int8_t>(), (I8{0, 0}));
  EXPECT_EQ(sf::ones({2}, sf::kU8).to_vector<std::uint8_t>(), (U8{1, 1}));
  EXPECT_EQ(sf::arange(253, 258, 1, sf::kU8).to_vector<std::uint8_t>(), (U8{253, 254, 255, 0, 1}));
  EXPECT_EQ(sf::arange(0, 2, 0.5, sf::kI8).to_vector<std::int8_t>(), (I8{0, 0, 1, 1}));
  EXPECT_EQ(sf::full({}, -7, sf::kI8).item<std::int8_t>(), -7);
  EXPECT_EQ(sf::full({}, 200, sf::kU8).item<std::uint8_t>(), 200);
  EXPECT_THROW(sf::full({2}, 1, sf::kU8).to_vector<std::int8_t>(), sf::DTypeError);
  const std::uint8_t raw[] = {1, 2, 250};
  EXPECT_EQ(sf::from_blob(raw, {3}).to_vector<std::uint8_t>(), (U8{1, 2, 250}));

  std::ostringstream os;
  os << sf::from_vector(I8{-128, 5, 127});
  EXPECT_EQ(os.str(), "tensor([-128,    5,  127], dtype=i8)");
  os.str("");
  os << sf::from_vector(U8{0, 255});
  EXPECT_EQ(os.str(), "tensor([  0, 255], dtype=u8)");
}

}  // namespace
