#include "fusion/builders/matmul/builder.h"

#include <algorithm>

#include "backends/backend.h"
#include "fusion/builders/elementwise/builder.h"
#include "fusion/builders/traced_codec.h"
#include "fusion/trace.h"
#include "streamfuse/error.h"

namespace streamfuse::fusion {

void MatmulBuilder::reset() {
  status_ = BuilderStatus::kOpen;
  seen_ = len_ = ready_steps_ = 0;
  value_bytes_ = 0;
  shape_ = Shape();
  value_ = 0;
  chain_.clear();
  steps_.clear();
  relative_after_.clear();
  global_after_.clear();
}

bool MatmulBuilder::in_chain(core::TensorId id) const {
  return std::any_of(chain_.begin(), chain_.end(), [&](const ChainValue& v) { return v.id == id; });
}

void MatmulBuilder::register_op(const core::OpDesc& relative, const core::OpDesc& global) {
  if (status_ == BuilderStatus::kClosed) return;
  const bool taken = seen_ == 0                             ? take_product(relative, global)
                     : relative.kind == core::OpKind::kDrop ? take_drop(relative)
                                                            : take_step(relative);
  if (!taken) {
    status_ = BuilderStatus::kClosed;
    return;
  }
  if (seen_ > 0) {
    relative_after_.push_back(relative);
    global_after_.push_back(global);
  }
  ++seen_;
  // A prefix ending here is an optimization when it has a step and every value but the last
  // has died.
  const bool settled =
      std::all_of(chain_.begin(), chain_.end() - 1, [](const ChainValue& v) { return v.dead; });
  if (!steps_.empty() && settled) {
    len_ = seen_;
    ready_steps_ = steps_.size();
  }
}

bool MatmulBuilder::take_product(const core::OpDesc& rel, const core::OpDesc& real) {
  if (rel.kind != core::OpKind::kMatmul || rel.inputs.size() != 2 || rel.outputs.size() != 1)
    return false;
  if (rel.attrs.dtype != kF32 || rel.outputs[0].dtype != kF32) return false;
  for (const core::TensorDesc& in : rel.inputs)
    if (in.dtype != kF32) return false;
  shape_ = rel.outputs[0].shape;
  value_ = rel.outputs[0].id;
  value_bytes_ = scored_bytes(real.outputs[0]);
  chain_.push_back({value_, false});
  return true;
}

bool MatmulBuilder::take_drop(const core::OpDesc& rel) {
  const core::TensorId id = rel.inputs[0].id;
  if (id == value_) return false;  // the result is not wanted: nothing here to fuse
  for (ChainValue& v : chain_)
    if (v.id == id && !v.dead) {
      v.dead = true;
      return true;
    }
  return false;  // an existing tensor's drop: the plan would have to erase it
}

bool MatmulBuilder::take_step(const core::OpDesc& rel) {
  if (steps_.size() >= backends::kMaxProductSteps) return false;
  int slot = -1;
  for (std::size_t i = 0; i < rel.inputs.size(); ++i) {
    if (rel.inputs[i].id != value_) continue;
    if (slot >= 0) return false;  // value <op> value: no operand to apply
    slot = static_cast<int>(i);
  }
  if (slot < 0 || !backends::is_product_step(rel, slot, shape_)) return false;
  if (rel.inputs.size() == 2) {
    const core::TensorDesc& operand = rel.inputs[static_cast<std::size_t>(1 - slot)];
    // An operand made in the chain would be one of its values, which die inside it.
    if (in_chain(operand.id) || !traced_codec::broadcasts_to(operand.shape, shape_)) return false;
  }

  if (rel.inputs[static_cast<std::size_t>(slot)].status == core::TensorStatus::kReadWrite)
    chain_.back().dead = true;
  value_ = rel.outputs[0].id;
  chain_.push_back({value_, false});
  steps_.push_back({static_cast<std::uint32_t>(seen_), slot});
  return true;
}

std::unique_ptr<Optimization> MatmulBuilder::build() const {
  // The element-wise builder takes every step and drop (element-wise ops over one shape).
  ElementwiseBuilder epilogue;
  for (std::size_t i = 0; i + 1 < len_; ++i)
    epilogue.register_op(relative_after_[i], global_after_[i]);
  if (epilogue.len() + 1 != len_)
    throw Error("matmul builder: the element-wise builder did not take the steps' ops");
  return std::make_unique<MatmulOptimization>(
      len_,
      std::vector<MatmulStep>(steps_.begin(), steps_.begin() + static_cast<long>(ready_steps_)),
      epilogue.build());
}

}  // namespace streamfuse::fusion
