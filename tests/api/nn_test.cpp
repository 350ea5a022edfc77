// nn:: functions against double-precision formulas.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "tests/reference.h"

namespace sf = streamfuse;
using namespace streamfuse::testing;

namespace {

TEST(NnTest, GeluExactAndTanh) {
  std::mt19937_64 rng(1);
  const std::vector<double> v = random_values(4096, kF32, -8, 8, rng);
  const sf::Tensor x = tensor_of(v, {4096}, kF32);
  const std::vector<float> exact = sf::nn::gelu(x).to_vector<float>();
  const std::vector<float> approx =
      sf::nn::gelu(x, sf::nn::GeluApproximation::kTanh).to_vector<float>();
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double want = 0.5 * v[i] * (1 + std::erf(v[i] / std::sqrt(2.0)));
    const double k = std::sqrt(2 / M_PI);
    const double want_tanh =
        0.5 * v[i] * (1 + std::tanh(k * (v[i] + 0.044715 * v[i] * v[i] * v[i])));
    EXPECT_NEAR(exact[i], want, 2e-6 * (1 + std::fabs(want))) << v[i];
    EXPECT_NEAR(approx[i], want_tanh, 2e-6 * (1 + std::fabs(want_tanh))) << v[i];
  }
}

TEST(NnTest, SoftmaxSumsToOneAndIsShiftInvariant) {
  std::mt19937_64 rng(2);
  std::vector<double> v = random_values(6 * 50, kF32, -30, 30, rng);
  for (double& e : v) e = std::round(e * 64) / 64;  // so that x + 1000 is exact
  const sf::Tensor x = tensor_of(v, {6, 50}, kF32);
  for (int axis : {0, 1, -1}) {
    const sf::Tensor s = sf::nn::softmax(x, axis);
    for (float v : sf::sum(s, axis).to_vector<float>()) EXPECT_NEAR(v, 1.0f, 1e-5);
    const std::vector<float> shifted = sf::nn::softmax(x + 1000.0f, axis).to_vector<float>();
    const std::vector<float> base = s.to_vector<float>();
    for (std::size_t i = 0; i < base.size(); ++i) EXPECT_NEAR(shifted[i], base[i], 1e-6);
  }
  const std::vector<float> p =
      sf::nn::softmax(sf::from_vector(std::vector<float>{0, std::log(3.0f)})).to_vector<float>();
  EXPECT_NEAR(p[0], 0.25f, 1e-7);
  EXPECT_NEAR(p[1], 0.75f, 1e-7);
  EXPECT_EQ(sf::nn::softmax(x.to(kF16)).dtype(), kF16);
}

// As in PyTorch: the softmax of a tensor with no elements is empty (a maximum over an empty axis
// would be an error), an integer one's is f32, and the axis is still checked.
TEST(NnTest, SoftmaxOfNothingIsEmpty) {
  for (const sf::Shape& shape : {sf::Shape{4, 0}, sf::Shape{0, 3}}) {
    for (int axis : {0, -1}) {
      const sf::Tensor s = sf::nn::softmax(sf::zeros(shape), axis);
      EXPECT_EQ(s.shape(), shape);
      EXPECT_EQ(s.dtype(), kF32);
      EXPECT_TRUE(s.to_vector<float>().empty());
      EXPECT_EQ(sf::nn::log_softmax(sf::zeros(shape, kI32), axis).dtype(), kF32);
      EXPECT_EQ(sf::nn::log_softmax(sf::zeros(shape, kF16), axis).dtype(), kF16);
    }
    EXPECT_THROW(sf::nn::softmax(sf::zeros(shape), 2), sf::ShapeError);
  }
}

TEST(NnTest, LayerNormOverTrailingDims) {
  std::mt19937_64 rng(3);
  const std::vector<double> v = random_values(4 * 3 * 8, kF32, -4, 4, rng);
  const sf::Tensor x = tensor_of(v, {4, 3, 8}, kF32);
  const sf::Tensor w = sf::full({3, 8}, 2.0f), b = sf::full({3, 8}, 0.5f);
  const std::vector<float> y = sf::nn::layer_norm(x, {3, 8}, w, b, 1e-5).to_vector<float>();
  for (int r = 0; r < 4; ++r) {
    double mean = 0, var = 0;
    for (int i = 0; i < 24; ++i) mean += v[r * 24 + i];
    mean /= 24;
    for (int i = 0; i < 24; ++i) var += (v[r * 24 + i] - mean) * (v[r * 24 + i] - mean);
    var /= 24;
    for (int i = 0; i < 24; ++i) {
      const double want = (v[r * 24 + i] - mean) / std::sqrt(var + 1e-5) * 2 + 0.5;
      EXPECT_NEAR(y[r * 24 + i], want, 1e-5);
    }
  }
  EXPECT_EQ(sf::nn::layer_norm(x.to(kBF16), {8}).dtype(), kBF16);
  EXPECT_THROW(sf::nn::layer_norm(x, {4}), sf::ShapeError);
  EXPECT_THROW(sf::nn::layer_norm(x, {8}, sf::ones({3})), sf::ShapeError);
}

TEST(NnTest, LogSoftmaxIsTheLogOfSoftmaxWithoutOverflow) {
  std::mt19937_64 rng(4);
  const std::vector<double> v = random_values(5 * 40, kF32, -20, 20, rng);
  const sf::Tensor x = tensor_of(v, {5, 40}, kF32);
  for (int axis : {0, 1, -1}) {
    const std::vector<float> y = sf::nn::log_softmax(x, axis).to_vector<float>();
    const int rows = axis == 0 ? 40 : 5, len = axis == 0 ? 5 : 40;
    for (int r = 0; r < rows; ++r) {
      auto at = [&](int i) { return axis == 0 ? i * 40 + r : r * 40 + i; };
      double m = -INFINITY, s = 0;
      for (int i = 0; i < len; ++i) m = std::max(m, v[at(i)]);
      for (int i = 0; i < len; ++i) s += std::exp(v[at(i)] - m);
      for (int i = 0; i < len; ++i) {
        const double want = v[at(i)] - m - std::log(s);
        EXPECT_NEAR(y[at(i)], want, 2e-6 * (1 + std::fabs(want))) << axis << " " << r << " " << i;
      }
    }
  }
  // Where softmax underflows to 0 its log would be -inf; log_softmax stays finite.
  const std::vector<float> far =
      sf::nn::log_softmax(sf::from_vector(std::vector<float>{0, 200})).to_vector<float>();
  EXPECT_EQ(far[0], -200.0f);
  EXPECT_EQ(far[1], 0.0f);
  EXPECT_EQ(sf::nn::log_softmax(x.to(kBF16)).dtype(), kBF16);
  EXPECT_EQ(sf::nn::log_softmax(x.to(kI32)).dtype(), kF32);
}

TEST(NnTest, RmsNormOverTrailingDims) {
  std::mt19937_64 rng(5);
  const std::vector<double> v = random_values(4 * 3 * 8, kF32, -4, 4, rng);
  const sf::Tensor x = tensor_of(v, {4, 3, 8}, kF32);
  const std::vector<double> wv = random_values(24, kF32, -2, 2, rng);
  const sf::Tensor w = tensor_of(wv, {3, 8}, kF32);
  const std::vector<float> y = sf::nn::rms_norm(x, {3, 8}, w, 1e-5).to_vector<float>();
  const std::vector<float> plain = sf::nn::rms_norm(x, {8}).to_vector<float>();
  for (int r = 0; r < 4; ++r) {
    double ms = 0;
    for (int i = 0; i < 24; ++i) ms += v[r * 24 + i] * v[r * 24 + i];
    const double scale = 1 / std::sqrt(ms / 24 + 1e-5);
    for (int i = 0; i < 24; ++i) {
      const double want = v[r * 24 + i] * scale * wv[i];
      EXPECT_NEAR(y[r * 24 + i], want, 2e-6 * (1 + std::fabs(want)));
    }
  }
  for (int r = 0; r < 12; ++r) {  // over the last dimension, the default eps (float's)
    double ms = 0;
    for (int i = 0; i < 8; ++i) ms += v[r * 8 + i] * v[r * 8 + i];
    const double eps = std::numeric_limits<float>::epsilon();
    for (int i = 0; i < 8; ++i)
      EXPECT_NEAR(plain[r * 8 + i], v[r * 8 + i] / std::sqrt(ms / 8 + eps), 2e-6);
  }
  EXPECT_EQ(sf::nn::rms_norm(x.to(kF16), {8}).dtype(), kF16);
  EXPECT_THROW(sf::nn::rms_norm(x, {3}), sf::ShapeError);
  EXPECT_THROW(sf::nn::rms_norm(x, {8}, sf::ones({3})), sf::ShapeError);
}

// Composed from ops, they fuse; fused, they give the unfused bits.
TEST(NnTest, NormalizationsGiveTheSameBitsFusedAndUnfused) {
  std::mt19937_64 rng(6);
  const std::vector<double> v = random_values(64 * 96, kF32, -6, 6, rng);
  const sf::Config saved = sf::config();
  std::vector<std::vector<float>> results[2];
  std::int64_t fused_launches[2] = {0, 0};
  for (bool fusion : {false, true}) {
    sf::Config c = saved;
    c.fusion = fusion;
    sf::set_config(c);
    const sf::FusionStats before = sf::fusion_stats();
    const sf::Tensor x = tensor_of(v, {64, 96}, kF32);
    const sf::Tensor w = sf::full({96}, 1.5f), b = sf::full({96}, -0.25f);
    for (int i = 0; i < 3; ++i) {  // a loop, so that plans are stored and replayed
      results[fusion].push_back(sf::nn::rms_norm(x, {96}, w).to_vector<float>());
      results[fusion].push_back(sf::nn::log_softmax(x * 0.5f).to_vector<float>());
      results[fusion].push_back(sf::nn::layer_norm(x + 1.0f, {96}, w, b).to_vector<float>());
      results[fusion].push_back(sf::nn::softmax(x, 0).to_vector<float>());
    }
    const sf::FusionStats after = sf::fusion_stats();
    fused_launches[fusion] = after.compiled_launches + after.interpreted_launches -
                             before.compiled_launches - before.interpreted_launches;
  }
  sf::set_config(saved);
  EXPECT_EQ(fused_launches[0], 0);
  EXPECT_GT(fused_launches[1], 0) << "their element-wise parts run as fused kernels";
  EXPECT_EQ(results[0], results[1]);
}

TEST(NnTest, Silu) {
  const sf::Tensor x = sf::from_vector(std::vector<float>{-2, 0, 3});
  const std::vector<float> y = sf::nn::silu(x).to_vector<float>();
  EXPECT_NEAR(y[0], -2 / (1 + std::exp(2.0)), 1e-6);
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_NEAR(y[2], 3 / (1 + std::exp(-3.0)), 1e-6);
}

}  // namespace
