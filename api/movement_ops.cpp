// Movement ops: reshape, permute, expand, slice, cat, contiguous and their compositions
// (transpose, unsqueeze, squeeze, flatten: they name themselves in errors, through api_call).
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
using core::OpAttrs;
using core::OpKind;

namespace {

Tensor record_movement(core::OpKind kind, Tensor& x, const Shape& out,
                       const core::OpAttrs& attrs = {}, std::span<const Scalar> scalars = {}) {
  const stream::TensorNode& n = *x.node();
  const DType dtype = n.dtype;
  const Device device = n.device;
  return record(kind, {&x, 1}, out, dtype, device, attrs, scalars);
}

}  // namespace

Tensor reshape(Tensor x, Shape shape) {
  const stream::TensorNode& n = node_of(x, "reshape");
  int inferred = -1;
  std::int64_t known = 1;
  for (int i = 0; i < shape.rank(); ++i) {
    if (shape[i] == -1 && inferred < 0) {
      inferred = i;
    } else if (shape[i] < 0) {
      throw ShapeError("reshape: target shape " + shape.to_string() +
                       " may hold one -1 (inferred) and otherwise sizes of 0 or more");
    } else {
      known *= shape[i];
    }
  }
  const std::int64_t numel = n.shape.numel();
  if (inferred >= 0) {
    if (known == 0 || numel % known != 0)
      throw ShapeError("reshape: cannot infer the -1 in " + shape.to_string() + " for a tensor " +
                       describe(x) + " of " + std::to_string(numel) + " elements");
    shape[inferred] = numel / known;
  } else if (known != numel) {
    throw ShapeError("reshape: a tensor " + describe(x) + " has " + std::to_string(numel) +
                     " elements, shape " + shape.to_string() + " holds " + std::to_string(known));
  }
  if (shape == n.shape) return x;
  return record_movement(core::OpKind::kReshape, x, shape);
}

Tensor permute(Tensor x, std::span<const int> axes) {
  const stream::TensorNode& n = node_of(x, "permute");
  const int rank = n.shape.rank();
  auto fail = [&] {
    std::string list;
    for (int a : axes) list += (list.empty() ? "" : ", ") + std::to_string(a);
    throw ShapeError("permute: axes (" + list + ") are not a permutation of the " +
                     std::to_string(rank) + " axes of a tensor " + describe(x));
  };
  if (static_cast<int>(axes.size()) != rank) fail();
  core::OpAttrs attrs;
  Shape out;
  bool seen[kMaxRank] = {};
  bool identity = true;
  for (int i = 0; i < rank; ++i) {
    const int a = axes[static_cast<std::size_t>(i)] < 0 ? axes[static_cast<std::size_t>(i)] + rank
                                                        : axes[static_cast<std::size_t>(i)];
    if (a < 0 || a >= rank || seen[a]) fail();
    seen[a] = true;
    identity = identity && a == i;
    attrs.perm[static_cast<std::size_t>(i)] = static_cast<std::int8_t>(a);
    out.push_back(n.shape[a]);
  }
  if (identity) return x;
  return record_movement(core::OpKind::kPermute, x, out, attrs);
}
Tensor permute(Tensor x, std::initializer_list<int> axes) {
  return permute(std::move(x), std::span<const int>(axes.begin(), axes.size()));
}

Tensor transpose(Tensor x, int axis0, int axis1) {
  return api_call("transpose", [&] {
    const stream::TensorNode& n = node_of(x, "transpose");
    const int rank = n.shape.rank();
    const int a = normalize_axis(axis0, rank, "transpose", x);
    const int b = normalize_axis(axis1, rank, "transpose", x);
    std::vector<int> axes(static_cast<std::size_t>(rank));
    for (int i = 0; i < rank; ++i) axes[static_cast<std::size_t>(i)] = i;
    std::swap(axes[static_cast<std::size_t>(a)], axes[static_cast<std::size_t>(b)]);
    return permute(std::move(x), axes);
  });
}

Tensor expand(Tensor x, Shape shape) {
  const stream::TensorNode& n = node_of(x, "expand");
  const int rank = shape.rank(), lead = rank - n.shape.rank();
  auto fail = [&](const std::string& why) {
    throw ShapeError("expand: cannot expand a tensor " + describe(x) + " to " + shape.to_string() +
                     ": " + why);
  };
  if (lead < 0) fail("the target has fewer dimensions");
  for (int i = 0; i < rank; ++i) {
    const std::int64_t have = i < lead ? -2 : n.shape[i - lead];
    if (shape[i] == -1) {
      if (i < lead) fail("-1 (keep) is only allowed for existing dimensions");
      shape[i] = have;
    } else if (shape[i] < 0) {
      fail("sizes must be 0 or more, or -1 to keep a dimension");
    } else if (i >= lead && have != 1 && have != shape[i]) {
      fail("dimension " + std::to_string(i) + " has size " + std::to_string(have) +
           "; only size-1 dimensions expand");
    }
  }
  if (shape == n.shape) return x;
  return record_movement(core::OpKind::kExpand, x, shape);
}

Tensor slice(Tensor x, int axis, std::int64_t start, std::int64_t stop, std::int64_t step) {
  const stream::TensorNode& n = node_of(x, "slice");
  const int a = normalize_axis(axis, n.shape.rank(), "slice", x);
  const std::int64_t size = n.shape[a];
  auto bound = [&](std::int64_t v, const char* what) {
    if (v < -size || v > size)
      throw ShapeError("slice: " + std::string(what) + " " + std::to_string(v) +
                       " is out of range for axis " + std::to_string(axis) + " of size " +
                       std::to_string(size) + " (tensor " + describe(x) + "); use -" +
                       std::to_string(size) + " to " + std::to_string(size));
    return v < 0 ? v + size : v;
  };
  if (step <= 0) throw ShapeError("slice: step must be positive, got " + std::to_string(step));
  const std::int64_t b = bound(start, "start"), e = bound(stop, "stop");
  const std::int64_t count = e > b ? (e - b + step - 1) / step : 0;
  if (b == 0 && count == size && step == 1) return x;
  Shape out = n.shape;
  out[a] = count;
  core::OpAttrs attrs;
  attrs.axis = static_cast<std::int8_t>(a);
  const Scalar scalars[] = {b, step};
  return record_movement(core::OpKind::kSlice, x, out, attrs, scalars);
}

Tensor cat(std::span<const Tensor> tensors, int axis) {
  if (tensors.empty()) throw ShapeError("cat: needs at least one tensor");
  std::vector<Tensor> ops(tensors.begin(), tensors.end());
  const Device device = api::common_device(ops, "cat");
  const Shape& first = ops[0].node()->shape;
  const int a = normalize_axis(axis, first.rank(), "cat", ops[0]);
  Shape out = first;
  out[a] = 0;
  DType dtype = ops[0].node()->dtype;
  for (const Tensor& t : ops) {
    const Shape& s = t.node()->shape;
    bool ok = s.rank() == first.rank();
    for (int i = 0; ok && i < s.rank(); ++i) ok = i == a || s[i] == first[i];
    if (!ok)
      throw ShapeError("cat: shapes " + api::describe_all(ops) + " differ outside axis " +
                       std::to_string(axis) + "; every other dimension must match");
    out[a] += s[a];
    dtype = promote_types(dtype, t.node()->dtype);
  }
  if (ops.size() == 1) return ops[0];
  core::OpAttrs attrs;
  attrs.axis = static_cast<std::int8_t>(a);
  attrs.dtype = dtype;
  return record(core::OpKind::kCat, ops, out, dtype, device, attrs);
}
Tensor cat(std::initializer_list<Tensor> tensors, int axis) {
  return cat(std::span<const Tensor>(tensors.begin(), tensors.size()), axis);
}

Tensor contiguous(Tensor x) {
  node_of(x, "contiguous");
  return record_movement(core::OpKind::kCopy, x, x.node()->shape);
}

Tensor unsqueeze(Tensor x, int axis) {
  return api_call("unsqueeze", [&] {
    const stream::TensorNode& n = node_of(x, "unsqueeze");
    const int rank = n.shape.rank() + 1;
    const int a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank)
      throw ShapeError("unsqueeze: axis " + std::to_string(axis) +
                       " is out of range for a tensor " + describe(x) + " (valid: " +
                       std::to_string(-rank) + " to " + std::to_string(rank - 1) + ")");
    Shape out;
    for (int i = 0, j = 0; i < rank; ++i) out.push_back(i == a ? 1 : n.shape[j++]);
    return reshape(std::move(x), out);
  });
}

Tensor squeeze(Tensor x, int axis) {
  return api_call("squeeze", [&] {
    const stream::TensorNode& n = node_of(x, "squeeze");
    const int a = normalize_axis(axis, n.shape.rank(), "squeeze", x);
    if (n.shape[a] != 1)
      throw ShapeError("squeeze: axis " + std::to_string(axis) + " of a tensor " + describe(x) +
                       " has size " + std::to_string(n.shape[a]) + ", not 1");
    Shape out;
    for (int i = 0; i < n.shape.rank(); ++i)
      if (i != a) out.push_back(n.shape[i]);
    return reshape(std::move(x), out);
  });
}

Tensor flatten(Tensor x) {
  return api_call("flatten", [&] {
    const std::int64_t numel = node_of(x, "flatten").shape.numel();
    return reshape(std::move(x), Shape{numel});
  });
}

}  // namespace streamfuse
