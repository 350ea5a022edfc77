#include "backends/backend.h"

namespace streamfuse::backends {

std::array<std::int64_t, kMaxRank> contiguous_strides(const Shape& shape) {
  std::array<std::int64_t, kMaxRank> s{};
  std::int64_t step = 1;
  for (int d = shape.rank() - 1; d >= 0; --d) {
    s[static_cast<std::size_t>(d)] = step;
    step *= shape[d];
  }
  return s;
}

bool is_contiguous(const TensorHandle& h, const Shape& shape) {
  std::int64_t step = 1;
  for (int d = shape.rank() - 1; d >= 0; --d) {
    if (shape[d] == 1) continue;
    if (h.strides[static_cast<std::size_t>(d)] != step) return false;
    step *= shape[d];
  }
  return true;
}

}  // namespace streamfuse::backends
