// matmul: NumPy semantics, validated here; run by the backend (oneDNN on the CPU).
#include <string>

#include "stream/frontend/recorder.h"
#include "streamfuse/error.h"
#include "streamfuse/ops.h"

namespace streamfuse {

using stream::frontend::describe_all;

Tensor matmul(Tensor a, Tensor b) {
  std::array<Tensor, 2> ops{std::move(a), std::move(b)};
  const Device device = stream::frontend::common_device(ops, "matmul");
  const Shape& sa = ops[0].node()->shape;
  const Shape& sb = ops[1].node()->shape;
  const DType da = ops[0].node()->dtype, db = ops[1].node()->dtype;
  if (sa.rank() == 0 || sb.rank() == 0)
    throw ShapeError("matmul: operands " + describe_all(ops) +
                     " must have at least one dimension; multiply 0-d tensors with *");
  if (da == kBool || db == kBool)
    throw DTypeError("matmul: operands " + describe_all(ops) +
                     " include bool; convert with .to(kF32) or .to(kI32)");
  const std::int64_t k_a = sa[sa.rank() - 1];
  const std::int64_t k_b = sb.rank() == 1 ? sb[0] : sb[sb.rank() - 2];
  if (k_a != k_b)
    throw ShapeError("matmul: inner dimensions differ: " + describe_all(ops) + " (" +
                     std::to_string(k_a) + " vs " + std::to_string(k_b) + ")");
  // Batch dimensions broadcast; 1-D operands have none.
  const int batch_a = std::max(0, sa.rank() - 2), batch_b = std::max(0, sb.rank() - 2);
  const int batch = std::max(batch_a, batch_b);
  Shape out;
  for (int i = 0; i < batch; ++i) {
    const int ia = i - (batch - batch_a), ib = i - (batch - batch_b);
    const std::int64_t x = ia >= 0 ? sa[ia] : 1, y = ib >= 0 ? sb[ib] : 1;
    if (x != y && x != 1 && y != 1)
      throw ShapeError("matmul: batch dimensions of " + describe_all(ops) + " do not broadcast (" +
                       std::to_string(x) + " vs " + std::to_string(y) + ")");
    out.push_back(x == 1 ? y : x);
  }
  if (sa.rank() >= 2) out.push_back(sa[sa.rank() - 2]);
  if (sb.rank() >= 2) out.push_back(sb[sb.rank() - 1]);
  stream::OpAttrs attrs;
  attrs.dtype = promote_types(da, db);
  return stream::frontend::record(stream::OpKind::kMatmul, ops, out, attrs.dtype, device, attrs);
}

}  // namespace streamfuse
