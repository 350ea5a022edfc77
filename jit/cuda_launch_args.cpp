#include "jit/cuda_launch_args.h"

#include <algorithm>
#include <limits>

#include "jit/cuda_kernel_abi.h"

namespace streamfuse::jit {

bool fits_32_bit_indexing(const backends::cpu::Iteration& it, int num_operands) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int32_t>::max();
  if (it.numel > kMax) return false;
  for (int k = 0; k < num_operands; ++k) {
    std::int64_t extent = 0;  // the largest |offset| the kernel computes for operand k
    for (int d = 0; d < it.rank; ++d) {
      const std::int64_t s = it.strides[static_cast<std::size_t>(k)][static_cast<std::size_t>(d)];
      const std::int64_t step = s < 0 ? -s : s;
      const std::int64_t n = it.sizes[static_cast<std::size_t>(d)] - 1;
      if (step != 0 && n > (kMax - extent) / step) return false;
      extent += n * step;
    }
  }
  return true;
}

std::vector<long long> cuda_launch_args(const backends::cpu::Iteration& it,
                                        std::span<const backends::cpu::Operand> ops,
                                        std::span<const std::int64_t> scalars) {
  const CudaArgsLayout l{ops.size(), static_cast<std::size_t>(it.rank), scalars.size()};
  std::vector<long long> w(l.words(), 0);
  for (std::size_t k = 0; k < ops.size(); ++k)
    w[l.data() + k] = static_cast<long long>(reinterpret_cast<std::uintptr_t>(ops[k].data));
  for (std::size_t d = 0; d < l.rank; ++d) {
    w[l.sizes() + d] = it.sizes[d];
    for (std::size_t k = 0; k < ops.size(); ++k) w[l.strides() + k * l.rank + d] = it.strides[k][d];
  }
  for (std::size_t i = 0; i < scalars.size(); ++i) w[l.scalar_args() + i] = scalars[i];
  w[l.numel()] = it.numel;
  w[l.narrow()] = fits_32_bit_indexing(it, static_cast<int>(ops.size())) ? 1 : 0;
  return w;
}

unsigned cuda_grid_blocks(std::int64_t numel, int multiprocessors) {
  const std::int64_t wanted = (numel + kCudaBlockSize - 1) / kCudaBlockSize;
  const std::int64_t cap = std::max<std::int64_t>(multiprocessors, 1) * 32;
  return static_cast<unsigned>(std::clamp<std::int64_t>(wanted, 1, cap));
}

}  // namespace streamfuse::jit
