// Reductions over one axis or over every element.
#include <optional>
#include <string>

#include "api/recorder.h"
#include "api/shape_rules.h"
#include "streamfuse/error.h"
#include "streamfuse/ops.h"

namespace streamfuse {

using api::describe;
using api::node_of;
using api::record;
using core::OpKind;

namespace {

// Over `axis` (a user axis: negative counts from the end), or every element when absent.
Tensor reduce(core::OpKind kind, Tensor x, std::optional<int> axis, bool keepdim) {
  const std::string name(core::op_name(kind));
  const stream::TensorNode& n = node_of(x, name);
  core::OpAttrs attrs;
  attrs.keepdim = keepdim;
  Shape out;
  std::int64_t reduced = n.shape.numel();
  if (!axis) {
    attrs.axis = core::kAllAxes;
  } else {
    const int a = api::normalize_axis(*axis, n.shape.rank(), name, x);
    attrs.axis = static_cast<std::int8_t>(a);
    reduced = n.shape[a];
    for (int i = 0; i < n.shape.rank(); ++i) {
      if (i != a)
        out.push_back(n.shape[i]);
      else if (keepdim)
        out.push_back(1);
    }
  }
  if (reduced == 0 &&
      (kind == core::OpKind::kMax || kind == core::OpKind::kMin || kind == core::OpKind::kArgmax))
    throw ShapeError(name + ": cannot reduce over zero elements (tensor " + describe(x) +
                     (axis ? ", axis " + std::to_string(*axis) + ")" : ")") +
                     "; a maximum or minimum of nothing is undefined");
  const DType dtype = core::reduced_dtype(kind, n.dtype);
  attrs.dtype = n.dtype;
  const Device device = n.device;
  return record(kind, {&x, 1}, out, dtype, device, attrs);
}

}  // namespace

Tensor sum(Tensor x) { return reduce(core::OpKind::kSum, std::move(x), std::nullopt, false); }
Tensor sum(Tensor x, int axis, bool keepdim) {
  return reduce(core::OpKind::kSum, std::move(x), axis, keepdim);
}
Tensor mean(Tensor x) { return reduce(core::OpKind::kMean, std::move(x), std::nullopt, false); }
Tensor mean(Tensor x, int axis, bool keepdim) {
  return reduce(core::OpKind::kMean, std::move(x), axis, keepdim);
}
Tensor max(Tensor x) { return reduce(core::OpKind::kMax, std::move(x), std::nullopt, false); }
Tensor max(Tensor x, int axis, bool keepdim) {
  return reduce(core::OpKind::kMax, std::move(x), axis, keepdim);
}
Tensor min(Tensor x) { return reduce(core::OpKind::kMin, std::move(x), std::nullopt, false); }
Tensor min(Tensor x, int axis, bool keepdim) {
  return reduce(core::OpKind::kMin, std::move(x), axis, keepdim);
}
Tensor argmax(Tensor x) { return reduce(core::OpKind::kArgmax, std::move(x), std::nullopt, false); }
Tensor argmax(Tensor x, int axis, bool keepdim) {
  return reduce(core::OpKind::kArgmax, std::move(x), axis, keepdim);
}

}  // namespace streamfuse
