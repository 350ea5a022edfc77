// Ops composed of other API ops, so that fusion sees (and fuses) their parts: masked_fill, tril,
// triu, flip, var, std, and reductions over several axes. Each runs its steps through api_call,
// so that an error names the function the user called.
#include <algorithm>
#include <cmath>
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

Tensor masked_fill(Tensor x, Tensor mask, Scalar value) {
  return api_call("masked_fill", [&] {
    const stream::TensorNode& n = node_of(x, "masked_fill");
    const stream::TensorNode& m = node_of(mask, "masked_fill");
    if (m.dtype != kBool)
      throw DTypeError("masked_fill: the mask " + describe(mask) +
                       " must be a bool tensor (compare first, e.g. x > 0)");
    const Tensor pair[] = {x, mask};
    if (api::broadcast_shapes(pair, "masked_fill") != n.shape)
      throw ShapeError("masked_fill: the mask " + describe(mask) + " must broadcast to x's shape " +
                       describe(x) + ", which the result keeps");
    const DType dtype = n.dtype;
    return where(std::move(mask), full({}, value, dtype, n.device), std::move(x));
  });
}

namespace {

// x with its elements off one side of a diagonal of its last two dimensions set to zero: those
// with column - row above `diagonal` (keep_lower) or below it.
Tensor triangle(Tensor x, std::int64_t diagonal, bool keep_lower, const char* name) {
  return api_call(name, [&] {
    const stream::TensorNode& n = node_of(x, name);
    const int rank = n.shape.rank();
    if (rank < 2)
      throw ShapeError(std::string(name) + ": x " + describe(x) +
                       " needs at least two dimensions (rows and columns)");
    const std::int64_t rows = n.shape[rank - 2], cols = n.shape[rank - 1];
    const Tensor offset = unsqueeze(arange(0, cols, 1, kI64, n.device), 0) -
                          unsqueeze(arange(0, rows, 1, kI64, n.device), 1);  // column - row
    Tensor keep = keep_lower ? offset <= diagonal : offset >= diagonal;
    // A zero of x's own dtype: a scalar 0 would promote a bool x to i64.
    const DType dtype = n.dtype;
    const Device device = n.device;
    return where(std::move(keep), std::move(x), full({}, 0, dtype, device));
  });
}

// `axes` of a tensor of `rank`, normalized, each once, in increasing order.
std::vector<int> normalized_axes(std::span<const int> axes, const Tensor& x, const char* name) {
  const int rank = node_of(x, name).shape.rank();
  std::vector<int> out;
  for (int a : axes) out.push_back(normalize_axis(a, rank, name, x));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end())
    throw ShapeError(std::string(name) + ": an axis is named twice (tensor " + describe(x) + ")");
  return out;
}

// reduce(x, a, keepdim) over several axes at once: the kept dimensions first, the reduced ones
// merged into one last dimension, reduced along it; keepdim puts size-1 dimensions back.
template <class Reduce>
Tensor over_axes(Tensor x, std::span<const int> axes, bool keepdim, const char* name,
                 Reduce reduce) {
  return api_call(name, [&] {
    const std::vector<int> reduced = normalized_axes(axes, x, name);
    const Shape shape = x.shape();
    if (reduced.empty()) return x;  // no axis: nothing reduced (as NumPy's axis=())
    if (reduced.size() == 1) return reduce(std::move(x), reduced[0], keepdim);
    std::vector<int> order;
    Shape kept, merged_shape;
    std::int64_t merged = 1;
    for (int d = 0; d < shape.rank(); ++d)
      if (!std::binary_search(reduced.begin(), reduced.end(), d)) {
        order.push_back(d);
        kept.push_back(shape[d]);
      }
    for (int d : reduced) {
      order.push_back(d);
      merged *= shape[d];
    }
    Shape flat = kept;
    flat.push_back(merged);
    Tensor y = reduce(permute(std::move(x), order).reshape(flat), -1, false);
    if (!keepdim) return y;
    Shape with_ones;
    for (int d = 0; d < shape.rank(); ++d)
      with_ones.push_back(std::binary_search(reduced.begin(), reduced.end(), d) ? 1 : shape[d]);
    return std::move(y).reshape(with_ones);
  });
}

}  // namespace

Tensor tril(Tensor x, std::int64_t diagonal) {
  return triangle(std::move(x), diagonal, true, "tril");
}
Tensor triu(Tensor x, std::int64_t diagonal) {
  return triangle(std::move(x), diagonal, false, "triu");
}

Tensor flip(Tensor x, int axis) {
  return api_call("flip", [&] {
    const stream::TensorNode& n = node_of(x, "flip");
    const int a = normalize_axis(axis, n.shape.rank(), "flip", x);
    const std::int64_t size = n.shape[a];
    if (size <= 1) return x;
    return index_select(std::move(x), a, arange(size - 1, -1, -1, kI64, n.device));
  });
}

Tensor var(Tensor x, int axis, bool keepdim, double correction) {
  return api_call("var", [&] {
    const stream::TensorNode& n = node_of(x, "var");
    if (n.dtype == kBool)
      throw DTypeError("var: not defined for bool tensors (" + describe(x) +
                       "); convert with .to(kF32)");
    const int a = normalize_axis(axis, n.shape.rank(), "var", x);
    const double count = static_cast<double>(n.shape[a]) - correction;
    if (!is_floating(n.dtype)) x = std::move(x).to(kF32);
    Tensor centered = x - mean(x, a, true);
    Tensor square = centered * centered;
    return sum(std::move(square), a, keepdim) / count;
  });
}

Tensor var(Tensor x, double correction) {
  return api_call("var", [&] {
    node_of(x, "var");
    return var(flatten(std::move(x)), 0, false, correction);
  });
}

Tensor std(Tensor x, int axis, bool keepdim, double correction) {
  return api_call("std", [&] { return sqrt(var(std::move(x), axis, keepdim, correction)); });
}
Tensor std(Tensor x, double correction) {
  return api_call("std", [&] { return sqrt(var(std::move(x), correction)); });
}

#define STREAMFUSE_OVER_AXES(name)                                                       \
  Tensor name(Tensor x, std::span<const int> axes, bool keepdim) {                       \
    return over_axes(std::move(x), axes, keepdim, #name,                                 \
                     [](Tensor t, int a, bool k) { return name(std::move(t), a, k); });  \
  }                                                                                      \
  Tensor name(Tensor x, std::initializer_list<int> axes, bool keepdim) {                 \
    return name(std::move(x), std::span<const int>(axes.begin(), axes.size()), keepdim); \
  }
STREAMFUSE_OVER_AXES(sum)
STREAMFUSE_OVER_AXES(mean)
STREAMFUSE_OVER_AXES(max)
STREAMFUSE_OVER_AXES(min)
#undef STREAMFUSE_OVER_AXES

}  // namespace streamfuse
