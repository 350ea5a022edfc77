#include "core/relative.h"

#include <algorithm>
#include <cassert>

namespace streamfuse::core {

void RelativeConverter::reset() {
  ids_.clear();
  sizes_.clear();
  next_scalar_ = 0;
}

std::uint64_t DenseNumbering::number(std::uint64_t key) {
  if (index_.empty()) {
    for (std::size_t i = keys_.size(); i-- > 0;)
      if (keys_[i] == key) return i;
    return add_new(key);
  }
  const auto [at, added] = index_.try_emplace(key, keys_.size());
  if (added) keys_.push_back(key);
  return at->second;
}

std::uint64_t DenseNumbering::add_new(std::uint64_t key) {
  assert(std::find(keys_.begin(), keys_.end(), key) == keys_.end());
  keys_.push_back(key);
  if (!index_.empty()) {
    index_.emplace(key, keys_.size() - 1);
  } else if (keys_.size() > kScanned) {
    for (std::size_t i = 0; i < keys_.size(); ++i) index_.emplace(keys_[i], i);
  }
  return keys_.size() - 1;
}

void RelativeConverter::convert_desc(const TensorDesc& global, TensorDesc& relative, bool output) {
  relative.id = output ? ids_.add_new(global.id) : ids_.number(global.id);
  relative.shape = global.shape;
  for (int d = 0; d < global.shape.rank(); ++d) {
    const std::int64_t size = global.shape[d];
    relative.shape[d] =
        size == 1 ? 0
                  : static_cast<std::int64_t>(sizes_.number(static_cast<std::uint64_t>(size))) + 1;
  }
  relative.dtype = global.dtype;
  relative.status = global.status;
}

void RelativeConverter::convert(const OpDesc& global, OpDesc& relative) {
  relative.kind = global.kind;
  relative.attrs = global.attrs;
  relative.inputs.resize(global.inputs.size());
  for (std::size_t i = 0; i < global.inputs.size(); ++i)
    convert_desc(global.inputs[i], relative.inputs[i], false);
  relative.outputs.resize(global.outputs.size());
  for (std::size_t i = 0; i < global.outputs.size(); ++i)
    convert_desc(global.outputs[i], relative.outputs[i], true);
  relative.scalars.resize(global.scalars.size());
  for (std::size_t i = 0; i < global.scalars.size(); ++i)
    relative.scalars[i] = Scalar::from_bits(global.scalars[i].kind(), next_scalar_++);
}

bool RelativeFormCheck::accept_desc(const TensorDesc& t, bool output) {
  if (t.id < tensors_.size()) {  // seen before: an input, as it was
    return !output && tensors_[t.id].first == t.shape && tensors_[t.id].second == t.dtype;
  }
  if (t.id != tensors_.size()) return false;
  for (std::int64_t d : t.shape) {
    if (d > sizes_ + 1) return false;  // ids given out in order (0 is size 1)
    if (d == sizes_ + 1) ++sizes_;
  }
  tensors_.emplace_back(t.shape, t.dtype);
  return true;
}

bool RelativeFormCheck::accept(const OpDesc& op) {
  for (const TensorDesc& t : op.inputs)
    if (!accept_desc(t, false)) return false;
  for (const TensorDesc& t : op.outputs)
    if (!accept_desc(t, true)) return false;
  for (const Scalar& s : op.scalars)
    if (s.bits() != scalars_++) return false;
  return true;
}

}  // namespace streamfuse::core
