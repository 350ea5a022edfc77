// The README's example: GELU from nn::gelu and from a custom erf written with tensor ops.
#include <streamfuse/streamfuse.h>

#include <cmath>
#include <iostream>

namespace sf = streamfuse;

sf::Tensor erf_positive(const sf::Tensor& x) {
  const float p = 0.3275911f, a1 = 0.254829592f, a2 = -0.284496736f, a3 = 1.421413741f,
              a4 = -1.453152027f, a5 = 1.061405429f;
  sf::Tensor t = sf::recip(sf::abs(x) * p + 1.0f);
  sf::Tensor tmp = (((t * a5 + a4) * t + a3) * t + a2) * t + a1;
  return 1.0f - tmp * t * sf::exp(-x * x);
}
sf::Tensor erf_custom(const sf::Tensor& x) {
  return sf::where(x > 0.0f, erf_positive(x), -erf_positive(-x));
}
sf::Tensor gelu_custom(const sf::Tensor& x) {
  return x * (erf_custom(x / std::sqrt(2.0f)) + 1.0f) / 2.0f;
}
int main() {
  sf::manual_seed(7);
  sf::Tensor x = sf::randn({32, 512, 2048});  // f32 on the CPU by default
  sf::Tensor err = sf::max(sf::abs(sf::nn::gelu(x) - gelu_custom(x)));
  std::cout << "max |gelu - gelu_custom| = " << err.item<float>() << "\n";
  std::cout << sf::matmul(sf::ones({2, 3}), sf::ones({3, 4})) << "\n";
}
