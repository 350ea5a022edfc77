#include "backends/prepared_op_codec.h"

#include "backends/matmul_layout.h"
#include "cache/op_codec.h"

namespace streamfuse::backends {

void put_prepared_ops(cache::OutArchive& out, const std::vector<backends::PreparedOp>& ops) {
  out(static_cast<std::uint32_t>(ops.size()));
  for (const backends::PreparedOp& p : ops) {
    cache::put_op(out, p.op);
    out(static_cast<std::uint32_t>(p.input_strides.size()));
    for (const auto& strides : p.input_strides)
      for (std::int64_t s : strides) out(s);
  }
}

namespace {

// A matmul as a backend records it (operands read as the product's dtype, no scalars), with
// shapes and strides the backend can prepare: preparing makes library objects of these sizes
// (oneDNN primitives), so a product the API could not have recorded is rejected here, with the
// backend's own rule.
void check_matmul(const backends::PreparedOp& p) {
  const core::OpDesc& op = p.op;
  if (op.attrs.dtype == kBool || !op.scalars.empty() || op.inputs[0].dtype != op.attrs.dtype ||
      op.inputs[1].dtype != op.attrs.dtype || op.outputs[0].dtype != op.attrs.dtype)
    cache::bad_payload("prepared matmul of mixed dtypes");
  const backends::MatmulOperand a{nullptr, op.inputs[0].shape, p.input_strides[0]};
  const backends::MatmulOperand b{nullptr, op.inputs[1].shape, p.input_strides[1]};
  if (std::string why = backends::matmul_operands_problem(a, b, op.outputs[0].shape); !why.empty())
    cache::bad_payload("prepared " + core::to_string(op) + ": " + why);
}

}  // namespace

std::vector<backends::PreparedOp> get_prepared_ops(cache::InArchive& in) {
  std::vector<backends::PreparedOp> ops;
  // One by one: a count that lies about a short payload fails before it allocates.
  for (std::uint32_t n = cache::get_size(in, cache::kMaxItems, "prepared op"); n > 0; --n) {
    backends::PreparedOp& p = ops.emplace_back();
    p.op = cache::get_op(in);
    if (p.op.kind != core::OpKind::kMatmul || p.op.inputs.size() != 2 || p.op.outputs.size() != 1)
      cache::bad_payload("prepared op " + std::string(core::op_name(p.op.kind)));
    p.input_strides.resize(cache::get_size(in, 2, "prepared op operand"));
    if (p.input_strides.size() != p.op.inputs.size()) cache::bad_payload("prepared op strides");
    for (auto& strides : p.input_strides)
      for (std::int64_t& s : strides) in(s);
    check_matmul(p);
  }
  return ops;
}

std::string encode_prepared_ops(const std::vector<backends::PreparedOp>& ops) {
  return cache::encode_with([&](cache::OutArchive& out) { put_prepared_ops(out, ops); });
}

std::vector<backends::PreparedOp> decode_prepared_ops(std::string_view bytes) {
  return cache::decode_with(bytes, [](cache::InArchive& in) { return get_prepared_ops(in); });
}

}  // namespace streamfuse::backends
