// The last step of every API op: turn validated operands into an OpDesc, hand it to this
// thread's stream, and return the result's handle.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "core/ir.h"
#include "stream/tensor_node.h"
#include "streamfuse/tensor.h"

namespace streamfuse::api {

// The node of `t`; throws Error naming `op` if t is undefined.
stream::TensorNode& node_of(const Tensor& t, std::string_view op);
// "[2, 3] f32" for messages.
std::string describe(const Tensor& t);
// "[2, 3] f32 and [4] f32" / "[2] f32, [2] i32 and [3] bool".
std::string describe_all(std::span<const Tensor> ts);
// The common device of `operands`; throws DeviceError naming `op` if they differ.
Device common_device(std::span<const Tensor> operands, std::string_view op);

// Records op `kind` reading `operands` (in order; already validated, all defined and on one
// device) and returns its result of `shape` and `dtype`. An operand held only by `operands` is
// its last use: it is recorded as ReadWrite and its value becomes the op's.
Tensor record(core::OpKind kind, std::span<Tensor> operands, const Shape& shape, DType dtype,
              Device device, const core::OpAttrs& attrs = {}, std::span<const Scalar> scalars = {});

}  // namespace streamfuse::api
