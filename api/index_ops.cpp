// index_select, embedding and gather: validation at the call; the values of the indices are
// checked when the op runs (backends/index_layout.h). slice_update.
#include <string>
#include <vector>

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

namespace {

void check_index_dtype(const Tensor& indices, std::string_view op, std::string_view what) {
  const DType d = node_of(indices, op).dtype;
  if (d != kI32 && d != kI64)
    throw DTypeError(std::string(op) + ": " + std::string(what) + " " + describe(indices) +
                     " must be i32 or i64 (convert with .to(kI64))");
}

// The operands of an index op, checked as both need them: defined, `what` (the indices) i32 or
// i64, one device, and x with an axis `axis` (normalized into `axis`).
struct IndexOperands {
  std::vector<Tensor> ops;  // x, indices
  Device device;
  int axis;
};
IndexOperands index_operands(Tensor x, Tensor indices, int axis, std::string_view op,
                             std::string_view what) {
  const stream::TensorNode& n = node_of(x, op);
  check_index_dtype(indices, op, what);
  std::vector<Tensor> ops{std::move(x), std::move(indices)};
  const Device device = api::common_device(ops, op);
  if (n.shape.rank() == 0)
    throw ShapeError(std::string(op) + ": x " + describe(ops[0]) + " has no axis to index");
  const int a = normalize_axis(axis, n.shape.rank(), op, ops[0]);
  if (n.shape[a] == 0 && ops[1].node()->shape.numel() > 0)
    throw ShapeError(std::string(op) + ": axis " + std::to_string(axis) + " of x " +
                     describe(ops[0]) + " is empty: no index is valid");
  return {std::move(ops), device, a};
}

}  // namespace

Tensor index_select(Tensor x, int axis, Tensor indices) {
  return api_call("index_select", [&] {
    IndexOperands o =
        index_operands(std::move(x), std::move(indices), axis, "index_select", "indices");
    const stream::TensorNode& n = *o.ops[0].node();
    const Shape& is = o.ops[1].node()->shape;
    if (n.shape.rank() - 1 + is.rank() > kMaxRank)
      throw ShapeError("index_select: x " + describe(o.ops[0]) + " indexed by " +
                       describe(o.ops[1]) + " would have rank " +
                       std::to_string(n.shape.rank() - 1 + is.rank()) + ", beyond " +
                       std::to_string(kMaxRank));
    Shape out;
    for (int d = 0; d < o.axis; ++d) out.push_back(n.shape[d]);
    for (int d = 0; d < is.rank(); ++d) out.push_back(is[d]);
    for (int d = o.axis + 1; d < n.shape.rank(); ++d) out.push_back(n.shape[d]);
    core::OpAttrs attrs;
    attrs.axis = static_cast<std::int8_t>(o.axis);
    attrs.dtype = n.dtype;
    return record(core::OpKind::kIndexSelect, o.ops, out, n.dtype, o.device, attrs);
  });
}

Tensor embedding(Tensor weight, Tensor ids) {
  return api_call("embedding", [&] {
    const stream::TensorNode& w = node_of(weight, "embedding");
    check_index_dtype(ids, "embedding", "ids");
    if (w.shape.rank() < 1)
      throw ShapeError("embedding: weight " + describe(weight) +
                       " must have at least one dimension (rows of embeddings)");
    return index_select(std::move(weight), 0, std::move(ids));
  });
}

Tensor gather(Tensor x, int axis, Tensor index) {
  return api_call("gather", [&] {
    IndexOperands o = index_operands(std::move(x), std::move(index), axis, "gather", "index");
    const stream::TensorNode& n = *o.ops[0].node();
    const Shape is = o.ops[1].node()->shape;
    bool fits = is.rank() == n.shape.rank();
    for (int d = 0; fits && d < is.rank(); ++d) fits = d == o.axis || is[d] <= n.shape[d];
    if (!fits)
      throw ShapeError("gather: index " + describe(o.ops[1]) + " must have x's rank (x is " +
                       describe(o.ops[0]) + ") and no dimension larger than x's but along axis " +
                       std::to_string(axis));
    core::OpAttrs attrs;
    attrs.axis = static_cast<std::int8_t>(o.axis);
    attrs.dtype = n.dtype;
    return record(core::OpKind::kGather, o.ops, is, n.dtype, o.device, attrs);
  });
}

Tensor slice_update(Tensor x, int axis, std::int64_t start, Tensor src) {
  return api_call("slice_update", [&] {
    const stream::TensorNode& n = node_of(x, "slice_update");
    node_of(src, "slice_update");
    std::vector<Tensor> ops{std::move(x), std::move(src)};
    const Device device = api::common_device(ops, "slice_update");
    if (n.shape.rank() == 0)
      throw ShapeError("slice_update: x " + describe(ops[0]) + " has no axis to update along");
    const int a = normalize_axis(axis, n.shape.rank(), "slice_update", ops[0]);
    const Shape& ss = ops[1].node()->shape;
    bool fits = ss.rank() == n.shape.rank();
    for (int d = 0; fits && d < ss.rank(); ++d) fits = d == a || ss[d] == n.shape[d];
    if (!fits)
      throw ShapeError("slice_update: src " + describe(ops[1]) + " must have x's shape (x is " +
                       describe(ops[0]) + ") but along axis " + std::to_string(axis));
    const std::int64_t size = n.shape[a], b = start < 0 ? start + size : start;
    if (b < 0 || b + ss[a] > size)
      throw ShapeError("slice_update: " + std::to_string(ss[a]) + " elements from " +
                       std::to_string(start) + " do not fit axis " + std::to_string(axis) +
                       " of size " + std::to_string(size) + " (x " + describe(ops[0]) + ")");
    core::OpAttrs attrs;
    attrs.axis = static_cast<std::int8_t>(a);
    attrs.dtype = n.dtype;
    const Scalar scalars[] = {b};
    const Shape out = n.shape;
    const DType dtype = n.dtype;
    return record(core::OpKind::kSliceUpdate, ops, out, dtype, device, attrs, scalars);
  });
}

Tensor index_put(Tensor x, int axis, Tensor indices, Tensor src) {
  return api_call("index_put", [&] {
    node_of(src, "index_put");
    IndexOperands o =
        index_operands(std::move(x), std::move(indices), axis, "index_put", "indices");
    const stream::TensorNode& n = *o.ops[0].node();
    const Shape& is = o.ops[1].node()->shape;
    if (is.rank() != 1)
      throw ShapeError("index_put: indices " + describe(o.ops[1]) + " must be 1-D");
    o.ops.push_back(std::move(src));
    if (o.ops[2].device() != o.device)
      throw DeviceError("index_put: src " + describe(o.ops[2]) + " is on " +
                        o.ops[2].device().to_string() + ", x on " + o.device.to_string());
    const Shape& ss = o.ops[2].node()->shape;
    bool fits = ss.rank() == n.shape.rank();
    for (int d = 0; fits && d < ss.rank(); ++d) fits = ss[d] == (d == o.axis ? is[0] : n.shape[d]);
    if (!fits)
      throw ShapeError("index_put: src " + describe(o.ops[2]) + " must be x's shape (x is " +
                       describe(o.ops[0]) + ") with the " + std::to_string(is[0]) +
                       " indices along axis " + std::to_string(axis));
    core::OpAttrs attrs;
    attrs.axis = static_cast<std::int8_t>(o.axis);
    attrs.dtype = n.dtype;
    const Shape out = n.shape;
    const DType dtype = n.dtype;
    return record(core::OpKind::kIndexPut, o.ops, out, dtype, o.device, attrs);
  });
}

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
