// conv1d / conv2d against a loop in double (oneDNN sums in its own order: within a bound), and
// max_pool2d / avg_pool2d against loops in PyTorch's arithmetic (bit for bit), fusion off and on:
// strides, padding, dilation, groups, ceil_mode, NaN, unbatched and strided inputs, f16 / bf16;
// and the errors of each at the call.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include <streamfuse/streamfuse.h>

#include "tests/expect_error.h"
#include "tests/fusion_off_and_on.h"

namespace sf = streamfuse;
using streamfuse::testing::expect_error;

namespace {

struct ConvCase {
  std::int64_t n, c, h, w, o, kh, kw;
  sf::nn::Conv2dOptions options;
};

// conv2d in double, and for each output the sum of |x * w| (the scale of its rounding error).
void reference_conv(const std::vector<float>& x, const std::vector<float>& w,
                    const std::vector<float>* bias, const ConvCase& k, std::int64_t oh,
                    std::int64_t ow, std::vector<double>& out, std::vector<double>& scale) {
  const auto& o = k.options;
  const std::int64_t cg = k.c / o.groups, og = k.o / o.groups;
  out.assign(static_cast<std::size_t>(k.n * k.o * oh * ow), 0.0);
  scale = out;
  for (std::int64_t n = 0; n < k.n; ++n)
    for (std::int64_t oc = 0; oc < k.o; ++oc)
      for (std::int64_t y = 0; y < oh; ++y)
        for (std::int64_t z = 0; z < ow; ++z) {
          double acc = bias ? (*bias)[static_cast<std::size_t>(oc)] : 0.0, mag = std::abs(acc);
          const std::int64_t g = oc / og;
          for (std::int64_t ci = 0; ci < cg; ++ci)
            for (std::int64_t a = 0; a < k.kh; ++a)
              for (std::int64_t b = 0; b < k.kw; ++b) {
                const std::int64_t ih = y * o.stride[0] - o.padding[0] + a * o.dilation[0];
                const std::int64_t iw = z * o.stride[1] - o.padding[1] + b * o.dilation[1];
                if (ih < 0 || ih >= k.h || iw < 0 || iw >= k.w) continue;
                const double xv =
                    x[static_cast<std::size_t>(((n * k.c + g * cg + ci) * k.h + ih) * k.w + iw)];
                const double wv =
                    w[static_cast<std::size_t>(((oc * cg + ci) * k.kh + a) * k.kw + b)];
                acc += xv * wv;
                mag += std::abs(xv * wv);
              }
          const auto i = static_cast<std::size_t>(((n * k.o + oc) * oh + y) * ow + z);
          out[i] = acc;
          scale[i] = mag;
        }
}

std::int64_t out_size(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t p,
                      std::int64_t d) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

class Windows : public streamfuse::testing::FusionOffAndOn {};

TEST_P(Windows, Conv2dMatchesALoopForStridesPaddingDilationAndGroups) {
  const ConvCase cases[] = {
      {2, 3, 9, 11, 4, 3, 3, {}},
      {1, 4, 8, 8, 6, 3, 3, {.stride = {2, 2}, .padding = {1, 1}}},
      {2,
       6,
       10,
       7,
       6,
       3,
       2,
       {.stride = {1, 2}, .padding = {2, 0}, .dilation = {2, 1}, .groups = 3}},
      {1, 8, 12, 12, 8, 3, 3, {.padding = {1, 1}, .groups = 8}},  // depthwise (own kernel)
      {2, 4, 9, 7, 4, 3, 3, {.stride = {2, 2}, .padding = {1, 1}, .dilation = {2, 1}, .groups = 4}},
      {1, 3, 5, 6, 3, 5, 5, {.stride = {1, 3}, .padding = {2, 2}, .groups = 3}},
      {1, 2, 4, 4, 2, 3, 3, {.stride = {3, 3}, .padding = {1, 1}, .groups = 2}},
      {3, 5, 6, 9, 2, 1, 1, {}},                                     // 1x1
      {1, 2, 5, 5, 3, 5, 5, {.stride = {3, 3}, .padding = {2, 2}}},  // floor drops a window
      {1, 16, 20, 20, 32, 3, 3, {.stride = {2, 2}, .padding = {1, 1}, .groups = 2}},
  };
  for (const ConvCase& k : cases) {
    const sf::Tensor x = sf::randn({k.n, k.c, k.h, k.w});
    const sf::Tensor w = sf::randn({k.o, k.c / k.options.groups, k.kh, k.kw});
    const sf::Tensor b = sf::randn({k.o});
    const sf::Tensor y = sf::nn::conv2d(x, w, b, k.options);
    const auto& o = k.options;
    const std::int64_t oh = out_size(k.h, k.kh, o.stride[0], o.padding[0], o.dilation[0]);
    const std::int64_t ow = out_size(k.w, k.kw, o.stride[1], o.padding[1], o.dilation[1]);
    ASSERT_EQ(y.shape(), (sf::Shape{k.n, k.o, oh, ow}));
    const std::vector<float> bv = b.to_vector<float>();
    std::vector<double> want, scale;
    reference_conv(x.to_vector<float>(), w.to_vector<float>(), &bv, k, oh, ow, want, scale);
    const std::vector<float> got = y.to_vector<float>();
    for (std::size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-6 * scale[i] + 1e-6)
          << "case n=" << k.n << " c=" << k.c << " o=" << k.o << ", element " << i;
  }
}

TEST_P(Windows, Conv1dIsConv2dAlongOneDimension) {
  const sf::Tensor x = sf::randn({2, 4, 30});
  const sf::Tensor w = sf::randn({6, 2, 5});
  const sf::Tensor b = sf::randn({6});
  const sf::nn::Conv1dOptions o{.stride = 2, .padding = 3, .dilation = 2, .groups = 2};
  const sf::Tensor y = sf::nn::conv1d(x, w, b, o);
  const std::int64_t len = out_size(30, 5, 2, 3, 2);
  ASSERT_EQ(y.shape(), (sf::Shape{2, 6, len}));
  const ConvCase k{2, 4, 1, 30,
                   6, 1, 5, {.stride = {1, 2}, .padding = {0, 3}, .dilation = {1, 2}, .groups = 2}};
  const std::vector<float> bv = b.to_vector<float>();
  std::vector<double> want, scale;
  reference_conv(x.to_vector<float>(), w.to_vector<float>(), &bv, k, 1, len, want, scale);
  const std::vector<float> got = y.to_vector<float>();
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-6 * scale[i] + 1e-6) << i;
  // Unbatched: [C, L] in, [O, L'] out, the same values.
  const sf::Tensor one = sf::nn::conv1d(sf::slice(x, 0, 1, 2).reshape({4, 30}), w, b, o);
  ASSERT_EQ(one.shape(), (sf::Shape{6, len}));
  const std::vector<float> first = one.to_vector<float>();
  EXPECT_EQ(first, std::vector<float>(got.begin() + 6 * len, got.end()));
}

TEST_P(Windows, Conv2dReadsStridedAndUnbatchedInputsAndPromotes) {
  const sf::Tensor base = sf::randn({2, 7, 3, 8});
  const sf::Tensor x = sf::permute(base, {0, 2, 3, 1});  // [2, 3, 8, 7], strided
  const sf::Tensor w = sf::randn({4, 3, 2, 2});
  const sf::Tensor dense = sf::nn::conv2d(x.contiguous(), w);
  EXPECT_EQ(sf::nn::conv2d(x, w).to_vector<float>(), dense.to_vector<float>());
  const sf::Tensor single = sf::nn::conv2d(sf::slice(x, 0, 1, 2).reshape({3, 8, 7}), w);
  ASSERT_EQ(single.shape(), (sf::Shape{4, 7, 6}));
  const std::vector<float> d = dense.to_vector<float>();
  EXPECT_EQ(single.to_vector<float>(), std::vector<float>(d.begin() + 4 * 7 * 6, d.end()));
  // f16 input with an f32 weight: computed in f32, as matmul promotes.
  EXPECT_EQ(sf::nn::conv2d(x.to(sf::kF16), w).dtype(), sf::kF32);
}

TEST_P(Windows, Conv2dInHalfPrecisionAccumulatesInF32) {
  const ConvCase k{2, 4, 9, 9, 5, 3, 3, {.padding = {1, 1}}};
  for (const sf::DType d : {sf::kF16, sf::kBF16}) {
    const sf::Tensor x = sf::randn({2, 4, 9, 9}).to(d);
    const sf::Tensor w = sf::randn({5, 4, 3, 3}).to(d);
    const sf::Tensor y = sf::nn::conv2d(x, w, std::nullopt, k.options);
    ASSERT_EQ(y.dtype(), d);
    std::vector<double> want, scale;
    reference_conv(x.to(sf::kF32).to_vector<float>(), w.to(sf::kF32).to_vector<float>(), nullptr, k,
                   9, 9, want, scale);
    const std::vector<float> got = y.to(sf::kF32).to_vector<float>();
    const double ulp = d == sf::kF16 ? 1.0 / 1024 : 1.0 / 128;  // of the result's rounding
    for (std::size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[i], ulp * std::abs(want[i]) + 1e-5 * scale[i] + 1e-6)
          << sf::dtype_name(d) << " " << i;
  }
}

TEST_P(Windows, Conv2dOfEmptyBatchOrChannels) {
  EXPECT_EQ(sf::nn::conv2d(sf::zeros({0, 3, 5, 5}), sf::ones({2, 3, 3, 3})).shape(),
            (sf::Shape{0, 2, 3, 3}));
  const sf::Tensor y =
      sf::nn::conv2d(sf::zeros({1, 0, 5, 5}), sf::ones({2, 0, 3, 3}), sf::full({2}, 1.5f));
  EXPECT_EQ(y.to_vector<float>(), std::vector<float>(18, 1.5f));  // empty sums, plus the bias
}

// max_pool2d / avg_pool2d in PyTorch's arithmetic: the window row-major, an f32 sum divided once.
std::vector<float> reference_pool(bool max, const std::vector<float>& x, std::int64_t planes,
                                  std::int64_t h, std::int64_t w, std::int64_t k0, std::int64_t k1,
                                  const sf::nn::Pool2dOptions& o, std::int64_t oh,
                                  std::int64_t ow) {
  std::vector<float> out;
  const std::int64_t s0 = o.stride[0] ? o.stride[0] : k0, s1 = o.stride[1] ? o.stride[1] : k1;
  for (std::int64_t p = 0; p < planes; ++p)
    for (std::int64_t y = 0; y < oh; ++y)
      for (std::int64_t z = 0; z < ow; ++z) {
        const std::int64_t h0 = y * s0 - o.padding[0], w0 = z * s1 - o.padding[1];
        const float* plane = x.data() + p * h * w;
        if (max) {
          float best = -std::numeric_limits<float>::infinity();
          for (std::int64_t a = 0; a < k0; ++a)
            for (std::int64_t b = 0; b < k1; ++b) {
              const std::int64_t ih = h0 + a * o.dilation[0], iw = w0 + b * o.dilation[1];
              if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
              const float v = plane[ih * w + iw];
              if (v > best || std::isnan(v)) best = v;
            }
          out.push_back(best);
          continue;
        }
        const std::int64_t h1 = std::min(h0 + k0, h + o.padding[0]);
        const std::int64_t w1 = std::min(w0 + k1, w + o.padding[1]);
        const std::int64_t padded = (h1 - h0) * (w1 - w0);
        const std::int64_t hs = std::max<std::int64_t>(h0, 0), he = std::min(h1, h);
        const std::int64_t ws = std::max<std::int64_t>(w0, 0), we = std::min(w1, w);
        float sum = 0;
        for (std::int64_t ih = hs; ih < he; ++ih)
          for (std::int64_t iw = ws; iw < we; ++iw) sum += plane[ih * w + iw];
        out.push_back(sum /
                      static_cast<float>(o.count_include_pad ? padded : (he - hs) * (we - ws)));
      }
  return out;
}

std::int64_t pool_size(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t p,
                       std::int64_t d, bool ceil_mode) {
  const std::int64_t span = in + 2 * p - d * (k - 1) - 1;
  std::int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

// Bitwise equality, NaN included (EXPECT_EQ on floats fails on NaN == NaN).
void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want,
                      const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(want[i]))
        << what << ", element " << i << ": " << got[i] << " vs " << want[i];
}

TEST_P(Windows, PoolsMatchPyTorchsArithmeticBitForBit) {
  struct PoolCase {
    std::int64_t h, w, k0, k1;
    sf::nn::Pool2dOptions o;
  };
  const PoolCase cases[] = {
      {8, 8, 2, 2, {}},
      {9, 11, 3, 3, {.stride = {2, 2}, .padding = {1, 1}}},
      {9, 11, 3, 3, {.stride = {2, 2}, .padding = {1, 1}, .count_include_pad = false}},
      {10, 7, 3, 2, {.stride = {2, 2}, .padding = {1, 1}, .ceil_mode = true}},
      {10,
       7,
       3,
       2,
       {.stride = {2, 2}, .padding = {1, 1}, .ceil_mode = true, .count_include_pad = false}},
      {6, 6, 3, 3, {.stride = {2, 2}, .ceil_mode = true}},  // a last window past the input
      {7, 9, 2, 3, {.stride = {1, 2}, .padding = {1, 0}}},
  };
  for (const PoolCase& c : cases)
    for (const bool max : {true, false}) {
      for (const std::array<std::int64_t, 2> dilation :
           {std::array<std::int64_t, 2>{1, 1}, std::array<std::int64_t, 2>{2, 1}}) {
        if (!max && dilation[0] != 1) continue;
        sf::nn::Pool2dOptions o = c.o;
        o.dilation = dilation;
        std::vector<float> xv = sf::randn({2, 3, c.h, c.w}).to_vector<float>();
        xv[5] = NAN;  // one window of the first plane holds a NaN
        xv[40] = -INFINITY;
        const sf::Tensor x = sf::from_vector(xv, {2, 3, c.h, c.w});
        const sf::Tensor y =
            max ? sf::nn::max_pool2d(x, {c.k0, c.k1}, o) : sf::nn::avg_pool2d(x, {c.k0, c.k1}, o);
        const std::int64_t s0 = o.stride[0] ? o.stride[0] : c.k0;
        const std::int64_t s1 = o.stride[1] ? o.stride[1] : c.k1;
        const std::int64_t oh = pool_size(c.h, c.k0, s0, o.padding[0], dilation[0], o.ceil_mode);
        const std::int64_t ow = pool_size(c.w, c.k1, s1, o.padding[1], dilation[1], o.ceil_mode);
        ASSERT_EQ(y.shape(), (sf::Shape{2, 3, oh, ow}));
        expect_same_bits(y.to_vector<float>(),
                         reference_pool(max, xv, 6, c.h, c.w, c.k0, c.k1, o, oh, ow),
                         std::string(max ? "max" : "avg") + " " + std::to_string(c.h) + "x" +
                             std::to_string(c.w) + " dilation " + std::to_string(dilation[0]));
      }
    }
}

TEST_P(Windows, PoolsOfHalfPrecisionRoundTheF32Result) {
  const sf::Tensor x = sf::randn({1, 2, 6, 6});
  for (const sf::DType d : {sf::kF16, sf::kBF16}) {
    const sf::Tensor xd = x.to(d);
    const sf::Tensor avg = sf::nn::avg_pool2d(xd, {3, 3}, {.stride = {1, 1}, .padding = {1, 1}});
    ASSERT_EQ(avg.dtype(), d);
    const sf::Tensor want =
        sf::nn::avg_pool2d(xd.to(sf::kF32), {3, 3}, {.stride = {1, 1}, .padding = {1, 1}}).to(d);
    expect_same_bits(avg.to(sf::kF32).to_vector<float>(), want.to(sf::kF32).to_vector<float>(),
                     std::string(sf::dtype_name(d)));
    // Unbatched [C, H, W].
    EXPECT_EQ(sf::nn::max_pool2d(xd.reshape({2, 6, 6}), {2, 2}).shape(), (sf::Shape{2, 3, 3}));
  }
}

TEST_P(Windows, ConvAndPoolsAsAModelUsesThem) {
  // conv -> bias + relu (fused element-wise) -> pool -> conv: a small CNN's front, twice (the
  // second run replays the plans), equal both times.
  const sf::Tensor w1 = sf::randn({8, 3, 3, 3}) * 0.2f, b1 = sf::randn({8});
  const sf::Tensor w2 = sf::randn({4, 8, 3, 3}) * 0.2f;
  std::vector<float> first;
  for (int run = 0; run < 2; ++run) {
    sf::manual_seed(7);
    sf::Tensor x = sf::randn({2, 3, 16, 16});
    x = sf::relu(sf::nn::conv2d(std::move(x), w1, b1, {.padding = {1, 1}}));
    x = sf::nn::max_pool2d(std::move(x), {2, 2});
    x = sf::nn::conv2d(std::move(x), w2, std::nullopt, {.stride = {2, 2}});
    ASSERT_EQ(x.shape(), (sf::Shape{2, 4, 3, 3}));
    const std::vector<float> v = x.to_vector<float>();
    if (run == 0)
      first = v;
    else
      EXPECT_EQ(v, first);
  }
}

TEST_P(Windows, BadArgumentsAreErrorsAtTheCall) {
  const sf::Tensor x = sf::randn({1, 4, 8, 8});
  expect_error<sf::ShapeError>(
      [&] {
        sf::nn::conv2d(x, sf::randn({2, 3, 3, 3}));
      },
      {"conv2d", "4 channels", "[2, 3, 3, 3]"});
  expect_error<sf::ShapeError>(
      [&] {
        sf::nn::conv2d(x, sf::randn({3, 2, 3, 3}), std::nullopt, {.groups = 2});
      },
      {"conv2d", "do not split into 2 groups"});
  expect_error<sf::ShapeError>(
      [&] {
        sf::nn::conv2d(x, sf::randn({2, 4, 9, 9}));
      },
      {"conv2d", "does not fit"});
  expect_error<sf::ShapeError>(
      [&] {
        sf::nn::conv2d(x, sf::randn({2, 4, 3, 3}), std::nullopt, {.stride = {0, 1}});
      },
      {"conv2d", "stride (0, 1) must be positive"});
  expect_error<sf::ShapeError>(
      [&] {
        sf::nn::conv2d(x, sf::randn({2, 4, 3, 3}), std::nullopt, {.padding = {-1, 0}});
      },
      {"padding (-1, 0)"});
  expect_error<sf::ShapeError>(
      [&] {
        sf::nn::conv2d(x, sf::randn({2, 4, 3, 3}), sf::randn({3}));
      },
      {"bias", "[2]"});
  expect_error<sf::ShapeError>(
      [&] {
        sf::nn::conv2d(sf::randn({4, 8}), sf::randn({2, 4, 3, 3}));
      },
      {"conv2d", "[N, C, H, W]"});
  expect_error<sf::DTypeError>(
      [&] {
        sf::nn::conv2d(x.to(sf::kI32), sf::randn({2, 4, 3, 3}));
      },
      {"conv2d", "f32, f16 or bf16"});
  expect_error<sf::ShapeError>(
      [&] {
        sf::nn::conv1d(x, sf::randn({2, 4, 3}));
      },
      {"conv1d", "[N, C, L]"});
  expect_error<sf::ShapeError>(
      [&] {
        sf::nn::max_pool2d(x, {2, 2}, {.padding = {2, 2}});
      },
      {"max_pool2d", "at most half the kernel size"});
  expect_error<sf::ShapeError>(
      [&] {
        sf::nn::max_pool2d(x, {9, 9});
      },
      {"max_pool2d", "does not fit"});
  expect_error<sf::ShapeError>(
      [&] {
        sf::nn::avg_pool2d(x, {2, 2}, {.dilation = {2, 2}});
      },
      {"avg_pool2d", "no dilation"});
  expect_error<sf::ShapeError>([&] { sf::nn::max_pool2d(x, {0, 2}); }, {"kernel size (0, 2)"});
  expect_error<sf::ShapeError>(
      [&] {
        sf::nn::max_pool2d(x, {std::int64_t{1} << 40, 2});
      },
      {"out of range"});
  expect_error<sf::DTypeError>(
      [&] {
        sf::nn::avg_pool2d(x.to(sf::kI64), {2, 2});
      },
      {"avg_pool2d", "f32, f16 or bf16"});
  // Nothing was lost: x still reads.
  EXPECT_EQ(x.shape(), (sf::Shape{1, 4, 8, 8}));
  EXPECT_EQ(sf::nn::max_pool2d(x, {2, 2}).shape(), (sf::Shape{1, 4, 4, 4}));
}

STREAMFUSE_FUSION_OFF_AND_ON(Windows);

// A convolution still queued when the program exits runs in the thread-exit handlers that drain
// the thread's streams, after the thread's scratchpad buffer is gone: it must bring its own (it
// wrote into the freed buffer, which ASan and valgrind report and which crashed some exits).
TEST(WindowsAtExit, AConvolutionLeftForTheExitHandlersRuns) {
  const pid_t pid = fork();
  if (pid == 0) {
    const sf::Tensor w = sf::randn({4, 3, 3, 3});
    sf::nn::conv2d(sf::randn({1, 3, 8, 8}), w).to_vector<float>();  // the buffer exists now
    static sf::Tensor pending;  // recorded, never read: run at exit
    pending = sf::nn::conv2d(sf::randn({2, 3, 16, 16}), w);
    std::exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

}  // namespace
