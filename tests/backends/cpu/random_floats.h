// Floats drawn uniformly from [-1, 1) with a seed: the CPU matmul tests' operands.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace streamfuse::backends::cpu::testing {

inline std::vector<float> random_floats(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> value(-1, 1);
  std::vector<float> v(n);
  for (float& f : v) f = value(rng);
  return v;
}

}  // namespace streamfuse::backends::cpu::testing
