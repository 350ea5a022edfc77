#include "backends/prepared_op_codec.h"

#include "backends/backend.h"
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
    out(static_cast<std::uint32_t>(p.post_ops.size()));
    for (const backends::PreparedOp::PostOp& post : p.post_ops) {
      out(static_cast<std::uint8_t>(post.kind));
      for (std::int64_t s : post.strides) out(s);
    }
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
  // Post-ops: f32, strides that address no more than an operand of the product's shape could
  // (the primitive's operand descriptor is made of them).
  if (!p.post_ops.empty() && op.attrs.dtype != kF32)
    cache::bad_payload("prepared post-ops of a product of another dtype");
  const Shape& out = op.outputs[0].shape;
  for (const backends::PreparedOp::PostOp& post : p.post_ops)
    for (int d = 0; d < kMaxRank; ++d) {
      const std::int64_t s = post.strides[static_cast<std::size_t>(d)];
      if (s < 0 || s > (std::int64_t{1} << 40) || (d >= out.rank() && s != 0))
        cache::bad_payload("prepared post-op strides");
    }
}

// A conv2d as a backend records it: operands and result of its float dtype, contiguous (the CPU
// runs convolutions on dense copies), shapes that are a convolution's with its window.
void check_conv(const backends::PreparedOp& p) {
  const core::OpDesc& op = p.op;
  if ((op.attrs.dtype != kF32 && op.attrs.dtype != kF16 && op.attrs.dtype != kBF16) ||
      !op.scalars.empty() || op.inputs[0].dtype != op.attrs.dtype ||
      op.inputs[1].dtype != op.attrs.dtype || op.outputs[0].dtype != op.attrs.dtype)
    cache::bad_payload("prepared conv2d of other dtypes");
  std::string why;
  const std::optional<Shape> out = core::window_result_shape(
      op.kind, op.inputs[0].shape, op.inputs[1].shape, op.attrs.window, why);
  if (!out) cache::bad_payload("prepared " + core::to_string(op) + ": " + why);
  if (*out != op.outputs[0].shape)
    cache::bad_payload("prepared " + core::to_string(op) + ": not its result's shape");
  // Sizes a process could hold: a shape whose element count overflows is a lie.
  for (const Shape* s : {&op.inputs[0].shape, &op.inputs[1].shape, &op.outputs[0].shape}) {
    std::int64_t n = 1;
    for (std::int64_t d : *s)
      if (d != 0 && __builtin_mul_overflow(n, d, &n)) cache::bad_payload("prepared conv2d size");
    if (n > (std::int64_t{1} << 40)) cache::bad_payload("prepared conv2d size");
  }
  for (std::size_t i = 0; i < 2; ++i)
    if (p.input_strides[i] != backends::contiguous_strides(op.inputs[i].shape))
      cache::bad_payload("prepared conv2d with strided operands");
}

}  // namespace

std::vector<backends::PreparedOp> get_prepared_ops(cache::InArchive& in) {
  std::vector<backends::PreparedOp> ops;
  // One by one: a count that lies about a short payload fails before it allocates.
  for (std::uint32_t n = cache::get_size(in, cache::kMaxItems, "prepared op"); n > 0; --n) {
    backends::PreparedOp& p = ops.emplace_back();
    p.op = cache::get_op(in);
    const bool conv = p.op.kind == core::OpKind::kConv2d;
    if ((p.op.kind != core::OpKind::kMatmul && !conv) || p.op.inputs.size() != 2 ||
        p.op.outputs.size() != 1)
      cache::bad_payload("prepared op " + std::string(core::op_name(p.op.kind)));
    p.input_strides.resize(cache::get_size(in, 2, "prepared op operand"));
    if (p.input_strides.size() != p.op.inputs.size()) cache::bad_payload("prepared op strides");
    for (auto& strides : p.input_strides)
      for (std::int64_t& s : strides) in(s);
    p.post_ops.resize(cache::get_size(in, kMaxProductSteps, "prepared post-op"));
    for (backends::PreparedOp::PostOp& post : p.post_ops) {
      std::uint8_t kind = 0;
      in(kind);
      post.kind = static_cast<core::OpKind>(kind);
      if (conv || (post.kind != core::OpKind::kAdd && post.kind != core::OpKind::kSub &&
                   post.kind != core::OpKind::kMul && post.kind != core::OpKind::kDiv))
        cache::bad_payload("prepared post-op");
      for (std::int64_t& s : post.strides) in(s);
    }
    if (conv)
      check_conv(p);
    else
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
