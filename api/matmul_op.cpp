// matmul: NumPy semantics, validated here; run by the backend (oneDNN on the CPU).
#include <optional>
#include <string>

#include "api/recorder.h"
#include "core/ir.h"
#include "streamfuse/error.h"
#include "streamfuse/ops.h"

namespace streamfuse {

using api::describe_all;

Tensor matmul(Tensor a, Tensor b) {
  std::array<Tensor, 2> ops{std::move(a), std::move(b)};
  const Device device = api::common_device(ops, "matmul");
  const Shape& sa = ops[0].node()->shape;
  const Shape& sb = ops[1].node()->shape;
  const DType da = ops[0].node()->dtype, db = ops[1].node()->dtype;
  if (sa.rank() == 0 || sb.rank() == 0)
    throw ShapeError("matmul: operands " + describe_all(ops) +
                     " must have at least one dimension; multiply 0-d tensors with *");
  if (da == kBool || db == kBool)
    throw DTypeError("matmul: operands " + describe_all(ops) +
                     " include bool; convert with .to(kF32) or .to(kI32)");
  std::string why;
  const std::optional<Shape> out = core::matmul_result_shape(sa, sb, why);
  if (!out) throw ShapeError("matmul: " + why + ": operands " + describe_all(ops));
  core::OpAttrs attrs;
  attrs.dtype = promote_types(da, db);
  return api::record(core::OpKind::kMatmul, ops, *out, attrs.dtype, device, attrs);
}

}  // namespace streamfuse
