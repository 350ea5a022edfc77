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

bool is_product_step(const core::OpDesc& op, int value_slot, const Shape& shape) {
  const core::OpKind k = op.kind;
  if (k != core::OpKind::kAdd && k != core::OpKind::kSub && k != core::OpKind::kMul &&
      k != core::OpKind::kDiv)
    return false;
  if (op.outputs.size() != 1 || op.attrs.dtype != kF32 || op.outputs[0].dtype != kF32 ||
      op.outputs[0].shape != shape)
    return false;
  for (const core::TensorDesc& in : op.inputs)
    if (in.dtype != kF32) return false;
  const bool scalar = op.attrs.scalar_side != core::ScalarSide::kNone;
  if (op.inputs.size() != (scalar ? 1u : 2u) || value_slot < 0 ||
      static_cast<std::size_t>(value_slot) >= op.inputs.size())
    return false;
  const bool value_left = scalar ? op.attrs.scalar_side == core::ScalarSide::kRhs : value_slot == 0;
  return value_left || k == core::OpKind::kAdd || k == core::OpKind::kMul;
}

}  // namespace streamfuse::backends
