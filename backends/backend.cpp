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

TensorHandle Backend::elementwise_output(const core::OpDesc& op, std::span<TensorHandle> inputs) {
  const core::TensorDesc& od = op.outputs[0];
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const core::TensorDesc& in = op.inputs[i];
    if (in.status == core::TensorStatus::kReadWrite && in.dtype == od.dtype &&
        in.shape == od.shape && inputs[i].storage.may_overwrite() &&
        is_contiguous(inputs[i], in.shape)) {
      overwrite(inputs[i]);
      return inputs[i];
    }
  }
  return allocate(od.shape, od.dtype);
}

}  // namespace streamfuse::backends
