// index_select, embedding and gather, and the updates slice_update and index_put: validation at
// the call; the values of the indices are checked when the op runs (backends/index_layout.h).
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

// Whether `s` is `x` but along `axis`, where it has `along` (-1: any size).
bool same_but_along(const Shape& s, const Shape& x, int axis, std::int64_t along) {
  if (s.rank() != x.rank()) return false;
  for (int d = 0; d < s.rank(); ++d)
    if (d == axis ? along >= 0 && s[d] != along : s[d] != x[d]) return false;
  return true;
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
    if (!same_but_along(ss, n.shape, a, -1))
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
    api::common_device(o.ops, "index_put");
    if (!same_but_along(o.ops[2].node()->shape, n.shape, o.axis, is[0]))
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

namespace {

// scatter and scatter_add: PyTorch's rule for the shapes (index of x's rank, no dimension larger
// than src's, nor than x's but along axis), src converted to x's dtype.
Tensor record_scatter(core::OpKind kind, Tensor x, int axis, Tensor index, Tensor src,
                      std::string_view fn) {
  node_of(src, fn);
  IndexOperands o = index_operands(std::move(x), std::move(index), axis, fn, "index");
  const stream::TensorNode& n = *o.ops[0].node();
  if (kind == core::OpKind::kScatterAdd && n.dtype == kBool)
    throw DTypeError(std::string(fn) + ": x " + describe(o.ops[0]) +
                     " is bool, which has no addition (convert with .to(kI64))");
  const Shape is = o.ops[1].node()->shape;
  const Shape ss = src.node()->shape;
  bool fits = is.rank() == n.shape.rank() && ss.rank() == n.shape.rank();
  for (int d = 0; fits && d < is.rank(); ++d)
    fits = is[d] <= ss[d] && (d == o.axis || is[d] <= n.shape[d]);
  if (!fits)
    throw ShapeError(std::string(fn) + ": index " + describe(o.ops[1]) +
                     " must have the rank of x " + describe(o.ops[0]) + " and src " +
                     describe(src) + ", and no dimension larger than src's, nor than x's but " +
                     "along axis " + std::to_string(axis));
  o.ops.push_back(n.dtype == src.node()->dtype ? std::move(src) : std::move(src).to(n.dtype));
  api::common_device(o.ops, fn);
  core::OpAttrs attrs;
  attrs.axis = static_cast<std::int8_t>(o.axis);
  attrs.dtype = n.dtype;
  const Shape out = n.shape;
  const DType dtype = n.dtype;
  return record(kind, o.ops, out, dtype, o.device, attrs);
}

}  // namespace

Tensor scatter(Tensor x, int axis, Tensor index, Tensor src) {
  return api_call("scatter", [&] {
    return record_scatter(core::OpKind::kScatter, std::move(x), axis, std::move(index),
                          std::move(src), "scatter");
  });
}

Tensor scatter(Tensor x, int axis, Tensor index, Scalar value) {
  return api_call("scatter", [&] {
    const stream::TensorNode& n = node_of(x, "scatter");
    const Shape is = node_of(index, "scatter").shape;
    Tensor src = full(is, value, n.dtype, n.device);
    return record_scatter(core::OpKind::kScatter, std::move(x), axis, std::move(index),
                          std::move(src), "scatter");
  });
}

Tensor scatter_add(Tensor x, int axis, Tensor index, Tensor src) {
  return api_call("scatter_add", [&] {
    return record_scatter(core::OpKind::kScatterAdd, std::move(x), axis, std::move(index),
                          std::move(src), "scatter_add");
  });
}

}  // namespace streamfuse
