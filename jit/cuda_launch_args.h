// The argument words and grid of one CUDA kernel launch (jit/cuda_kernel_abi.h), from the merged
// iteration. Pure arithmetic, kept apart from the driver calls so it is tested on any machine.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backends/cpu/kernels/kernels.h"
#include "backends/cpu/kernels/layout.h"

namespace streamfuse::jit {

// The words of CudaArgsLayout{ops.size(), it.rank, scalars.size()}: each operand's data pointer
// (a device address), the sizes, every operand's strides, the scalars, numel and narrow.
std::vector<long long> cuda_launch_args(const backends::cpu::Iteration& it,
                                        std::span<const backends::cpu::Operand> ops,
                                        std::span<const std::int64_t> scalars);

// True when numel and every element offset any operand reaches fit in a signed 32-bit int, so
// the kernel may index in 32 bits.
bool fits_32_bit_indexing(const backends::cpu::Iteration& it, int num_operands);

// Blocks of kCudaBlockSize threads for `numel` elements: enough for one element (or one vector)
// per thread, at most `multiprocessors` * 32 (the kernels are grid-stride loops), at least 1.
unsigned cuda_grid_blocks(std::int64_t numel, int multiprocessors);

}  // namespace streamfuse::jit
