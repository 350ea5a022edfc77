#include "api/shape_rules.h"

#include <string>

#include "api/recorder.h"
#include "streamfuse/error.h"

namespace streamfuse::api {

Shape broadcast_shapes(std::span<const Tensor> operands, std::string_view op) {
  int rank = 0;
  for (const Tensor& t : operands) rank = std::max(rank, t.node()->shape.rank());
  Shape out;
  for (int i = 0; i < rank; ++i) out.push_back(1);
  for (const Tensor& t : operands) {
    const Shape& s = t.node()->shape;
    for (int i = 0; i < s.rank(); ++i) {
      const int o = rank - s.rank() + i;
      const std::int64_t d = s[i];
      if (d == out[o] || d == 1) continue;
      if (out[o] == 1) {
        out[o] = d;
        continue;
      }
      throw ShapeError(std::string(op) + ": shapes " + describe_all(operands) +
                       " do not broadcast: dimension " + std::to_string(o - rank) + " is " +
                       std::to_string(out[o]) + " in one and " + std::to_string(d) +
                       " in another; sizes must match or be 1 (reshape or expand an operand)");
    }
  }
  return out;
}

int normalize_axis(int axis, int rank, std::string_view op, const Tensor& t) {
  const int a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    throw ShapeError(std::string(op) + ": axis " + std::to_string(axis) +
                     " is out of range for a tensor " + describe(t) + " of rank " +
                     std::to_string(rank) + " (valid: " + std::to_string(-rank) + " to " +
                     std::to_string(rank - 1) + ")");
  return a;
}

void check_new_shape(const Shape& shape, DType dtype, std::string_view op) {
  // 2^62 bytes: far beyond any memory, and products below it cannot overflow int64.
  constexpr std::int64_t kMaxBytes = std::int64_t{1} << 62;
  std::int64_t bytes = static_cast<std::int64_t>(element_size(dtype));
  for (std::int64_t d : shape) {
    if (d < 0)
      throw ShapeError(std::string(op) + ": shape " + shape.to_string() +
                       " has a negative size; sizes are 0 or more");
  }
  for (std::int64_t d : shape) {
    if (d != 0 && bytes > kMaxBytes / d)
      throw ShapeError(std::string(op) + ": shape " + shape.to_string() + " of " +
                       std::string(dtype_name(dtype)) + " is too large to address");
    bytes *= d;
  }
}

}  // namespace streamfuse::api
