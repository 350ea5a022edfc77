// cumsum, argsort, sort and topk: scans along one axis (backends/scan_layout.h); sort and topk
// are argsort's order gathered.
#include <string>

#include "api/api_call.h"
#include "api/recorder.h"
#include "api/shape_rules.h"
#include "streamfuse/error.h"
#include "streamfuse/ops.h"

namespace streamfuse {

using api::api_call;
using api::describe;
using api::node_of;
using api::normalize_axis;
using api::record;

Tensor cumsum(Tensor x, int axis) {
  return api_call("cumsum", [&] {
    const stream::TensorNode& n = node_of(x, "cumsum");
    if (n.shape.rank() == 0) return cumsum(std::move(x).reshape({1}), 0).reshape({});
    const int a = normalize_axis(axis, n.shape.rank(), "cumsum", x);
    const DType out = is_floating(n.dtype) ? n.dtype : kI64;
    core::OpAttrs attrs;
    attrs.axis = static_cast<std::int8_t>(a);
    attrs.dtype = n.dtype;
    const Shape shape = n.shape;
    const Device device = n.device;
    return record(core::OpKind::kCumsum, {&x, 1}, shape, out, device, attrs);
  });
}

Tensor argsort(Tensor x, int axis, bool descending) {
  return api_call("argsort", [&] {
    const stream::TensorNode& n = node_of(x, "argsort");
    if (n.shape.rank() == 0) return zeros({}, kI64, n.device);
    const int a = normalize_axis(axis, n.shape.rank(), "argsort", x);
    core::OpAttrs attrs;
    attrs.axis = static_cast<std::int8_t>(a);
    attrs.dtype = n.dtype;
    const Scalar scalars[] = {descending ? 1 : 0};
    const Shape shape = n.shape;
    const Device device = n.device;
    return record(core::OpKind::kArgsort, {&x, 1}, shape, kI64, device, attrs, scalars);
  });
}

Sorted sort(Tensor x, int axis, bool descending) {
  return api_call("sort", [&] {
    node_of(x, "sort");
    if (x.shape().rank() == 0) return Sorted{x, zeros({}, kI64, x.device())};
    const int a = normalize_axis(axis, x.shape().rank(), "sort", x);
    Tensor order = argsort(x, a, descending);
    Tensor values = gather(std::move(x), a, order);
    return Sorted{std::move(values), std::move(order)};
  });
}

Sorted topk(Tensor x, std::int64_t k, int axis, bool largest) {
  return api_call("topk", [&] {
    const stream::TensorNode& n = node_of(x, "topk");
    const int rank = n.shape.rank();
    if (rank == 0)
      throw ShapeError("topk: x " + describe(x) + " has no axis to pick along (reshape it to [1])");
    const int a = normalize_axis(axis, rank, "topk", x);
    const std::int64_t size = n.shape[a];
    if (k < 0 || k > size)
      throw ShapeError("topk: k = " + std::to_string(k) + " is not in [0, " + std::to_string(size) +
                       "] for axis " + std::to_string(axis) + " of a tensor " + describe(x));
    Tensor order = argsort(x, a, largest).slice(a, 0, k);
    Tensor values = gather(std::move(x), a, order);
    return Sorted{std::move(values), std::move(order)};
  });
}

}  // namespace streamfuse
