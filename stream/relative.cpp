#include "stream/relative.h"

namespace streamfuse::stream {

void RelativeConverter::reset() {
  ids_.clear();
  sizes_.clear();
  next_scalar_ = 0;
}

void RelativeConverter::convert_desc(const TensorDesc& global, TensorDesc& relative) {
  relative.id = ids_.try_emplace(global.id, static_cast<TensorId>(ids_.size())).first->second;
  relative.shape = global.shape;
  for (int d = 0; d < global.shape.rank(); ++d) {
    const std::int64_t size = global.shape[d];
    relative.shape[d] =
        size == 1
            ? 0
            : sizes_.try_emplace(size, static_cast<std::int64_t>(sizes_.size()) + 1).first->second;
  }
  relative.dtype = global.dtype;
  relative.status = global.status;
}

void RelativeConverter::convert(const OpDesc& global, OpDesc& relative) {
  relative.kind = global.kind;
  relative.attrs = global.attrs;
  relative.inputs.resize(global.inputs.size());
  for (std::size_t i = 0; i < global.inputs.size(); ++i)
    convert_desc(global.inputs[i], relative.inputs[i]);
  relative.outputs.resize(global.outputs.size());
  for (std::size_t i = 0; i < global.outputs.size(); ++i)
    convert_desc(global.outputs[i], relative.outputs[i]);
  relative.scalars.resize(global.scalars.size());
  for (std::size_t i = 0; i < global.scalars.size(); ++i)
    relative.scalars[i] = Scalar::from_bits(global.scalars[i].kind(), next_scalar_++);
}

}  // namespace streamfuse::stream
