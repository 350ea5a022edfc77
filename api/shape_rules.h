// Shape rules shared by the API ops, each throwing ShapeError with the op and operands named.
#pragma once

#include <span>
#include <string_view>

#include "streamfuse/shape.h"
#include "streamfuse/tensor.h"

namespace streamfuse::api {

// The NumPy broadcast of the operands' shapes.
Shape broadcast_shapes(std::span<const Tensor> operands, std::string_view op);
// `axis` in [0, rank) (negative counts from the end).
int normalize_axis(int axis, int rank, std::string_view op, const Tensor& t);
// A shape a new tensor may have: no negative size, and a byte size that fits in memory's
// address range.
void check_new_shape(const Shape& shape, DType dtype, std::string_view op);

}  // namespace streamfuse::api
