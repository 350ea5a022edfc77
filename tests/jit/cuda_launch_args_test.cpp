// The words a CUDA launch passes (in CudaArgsLayout's order), when 32-bit indexing is allowed,
// and the grid size: arithmetic that runs on any machine.
#include "jit/cuda_launch_args.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "jit/cuda_kernel_abi.h"

namespace streamfuse::jit {
namespace {

using backends::cpu::Iteration;
using backends::cpu::Operand;

Iteration iteration(std::vector<std::int64_t> sizes,
                    std::vector<std::vector<std::int64_t>> strides) {
  Iteration it;
  it.rank = static_cast<int>(sizes.size());
  it.num_operands = static_cast<int>(strides.size());
  it.numel = 1;
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    it.sizes[d] = sizes[d];
    it.numel *= sizes[d];
  }
  for (std::size_t k = 0; k < strides.size(); ++k)
    for (std::size_t d = 0; d < sizes.size(); ++d) it.strides[k][d] = strides[k][d];
  return it;
}

TEST(CudaLaunchArgs, WordsFollowTheLayout) {
  const Iteration it = iteration({3, 5}, {{5, 1}, {0, 1}, {1, 3}});
  char a[8], b[8], c[8];
  const std::vector<Operand> ops = {{a, kF32, {}}, {b, kF16, {}}, {c, kF32, {}}};
  const std::vector<std::int64_t> scalars = {0x3f800000, -7};
  const std::vector<long long> w = cuda_launch_args(it, ops, scalars);
  const CudaArgsLayout l{3, 2, 2};
  ASSERT_EQ(w.size(), l.words());
  EXPECT_EQ(w[l.data() + 1], static_cast<long long>(reinterpret_cast<std::uintptr_t>(b)));
  EXPECT_EQ(w[l.sizes() + 0], 3);
  EXPECT_EQ(w[l.sizes() + 1], 5);
  EXPECT_EQ(w[l.strides() + 2 * 2 + 1], 3);  // operand 2, dimension 1
  EXPECT_EQ(w[l.strides() + 1 * 2 + 0], 0);  // operand 1 broadcast along dimension 0
  EXPECT_EQ(w[l.scalar_args() + 1], -7);
  EXPECT_EQ(w[l.numel()], 15);
  EXPECT_EQ(w[l.narrow()], 1);
}

TEST(CudaLaunchArgs, ThirtyTwoBitIndexingOnlyWhenEveryOffsetFits) {
  EXPECT_TRUE(fits_32_bit_indexing(iteration({1 << 20, 1 << 10}, {{1 << 10, 1}}), 1));
  EXPECT_FALSE(fits_32_bit_indexing(iteration({1 << 21, 1 << 10}, {{1 << 10, 1}}), 1));  // numel
  // Few elements, but a strided view reaches past 2^31 elements into its buffer.
  EXPECT_FALSE(fits_32_bit_indexing(iteration({4, 8}, {{1LL << 30, 1}}), 1));
  EXPECT_FALSE(fits_32_bit_indexing(iteration({4, 8}, {{1, 1}, {-(1LL << 30), 1}}), 2));
  EXPECT_TRUE(fits_32_bit_indexing(iteration({4, 8}, {{0, 0}}), 1));  // broadcast scalar
  EXPECT_TRUE(fits_32_bit_indexing(iteration({}, {{}}), 1));          // rank 0
  // No overflow in the check itself for absurd strides.
  EXPECT_FALSE(fits_32_bit_indexing(iteration({3, 2}, {{1LL << 62, 1}}), 1));
}

TEST(CudaLaunchArgs, GridCoversTheLaunchUpToAWaveBound) {
  EXPECT_EQ(cuda_grid_blocks(0, 132), 1u);
  EXPECT_EQ(cuda_grid_blocks(1, 132), 1u);
  EXPECT_EQ(cuda_grid_blocks(kCudaBlockSize * 10 + 1, 132), 11u);
  EXPECT_EQ(cuda_grid_blocks(1LL << 40, 132), 132u * 32);
  EXPECT_EQ(cuda_grid_blocks(1LL << 40, 0), 32u);
}

}  // namespace
}  // namespace streamfuse::jit
