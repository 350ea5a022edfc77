#include "cache/op_codec.h"

namespace streamfuse::cache {
namespace {

using In = InArchive;
using Out = OutArchive;

[[noreturn]] void bad(const std::string& what) { bad_payload(what); }

void put_shape(Out& out, const Shape& s) {
  out(static_cast<std::uint8_t>(s.rank()));
  for (std::int64_t d : s.dims()) out(d);
}
Shape get_shape(In& in) {
  std::uint8_t rank = 0;
  in(rank);
  if (rank > kMaxRank) bad("rank " + std::to_string(rank));
  Shape s;
  for (int i = 0; i < rank; ++i) {
    std::int64_t d = 0;
    in(d);
    if (d < 0) bad("negative size");
    s.push_back(d);
  }
  return s;
}

void put_tensor(Out& out, const core::TensorDesc& t) {
  out(t.id);
  put_shape(out, t.shape);
  put_enum(out, t.dtype);
  put_enum(out, t.status);
}
core::TensorDesc get_tensor(In& in) {
  core::TensorDesc t;
  in(t.id);
  t.shape = get_shape(in);
  t.dtype = get_enum<DType>(in, kNumDTypes, "dtype");
  t.status = get_enum<core::TensorStatus>(in, 3, "tensor status");
  return t;
}

// Whether `op`'s operand counts fit its kind as the frontend records it: one output (a Drop
// none), the kind's number of tensor inputs, one of them a scalar (scalars[0]) where a binary or
// compare op has a scalar side. Code that takes ops apart (builders, the eager path, printing)
// indexes operands by kind.
bool operands_fit_kind(const core::OpDesc& op) {
  const core::OpCategory category = core::op_category(op.kind);
  const bool scalar_operand = op.attrs.scalar_side != core::ScalarSide::kNone;
  if (scalar_operand &&
      ((category != core::OpCategory::kBinary && category != core::OpCategory::kCompare) ||
       op.scalars.empty()))
    return false;
  if (op.outputs.size() != (op.kind == core::OpKind::kDrop ? 0u : 1u)) return false;
  const int arity = core::op_info(op.kind).arity;
  if (arity < 0) return !op.inputs.empty();
  return op.inputs.size() == static_cast<std::size_t>(arity - (scalar_operand ? 1 : 0));
}

}  // namespace

void put_op(Out& out, const core::OpDesc& op) {
  put_enum(out, op.kind);
  out(static_cast<std::uint32_t>(op.inputs.size()));
  for (const auto& t : op.inputs) put_tensor(out, t);
  out(static_cast<std::uint32_t>(op.outputs.size()));
  for (const auto& t : op.outputs) put_tensor(out, t);
  out(static_cast<std::uint32_t>(op.scalars.size()));
  for (const Scalar& s : op.scalars) {
    put_enum(out, s.kind());
    out(s.bits());
  }
  put_enum(out, op.attrs.dtype);
  put_enum(out, op.attrs.scalar_side);
  out(op.attrs.axis, op.attrs.keepdim);
  for (std::int8_t p : op.attrs.perm) out(p);
  if (core::op_category(op.kind) == core::OpCategory::kWindow) {
    const core::Window& w = op.attrs.window;
    for (const auto* v : {&w.kernel, &w.stride, &w.padding, &w.dilation}) out((*v)[0], (*v)[1]);
    out(w.groups, w.ceil_mode, w.count_include_pad);
  }
}
core::OpDesc get_op(In& in) {
  core::OpDesc op;
  op.kind = get_enum<core::OpKind>(in, core::kNumOpKinds, "op kind");
  for (std::uint32_t n = get_size(in, kMaxItems, "input"); n > 0; --n)
    op.inputs.push_back(get_tensor(in));
  for (std::uint32_t n = get_size(in, kMaxItems, "output"); n > 0; --n)
    op.outputs.push_back(get_tensor(in));
  for (std::uint32_t n = get_size(in, kMaxItems, "scalar"); n > 0; --n) {
    const auto kind = get_enum<Scalar::Kind>(in, 3, "scalar kind");
    std::int64_t bits = 0;
    in(bits);
    op.scalars.push_back(Scalar::from_bits(kind, bits));
  }
  op.attrs.dtype = get_enum<DType>(in, kNumDTypes, "dtype");
  op.attrs.scalar_side = get_enum<core::ScalarSide>(in, 3, "scalar side");
  in(op.attrs.axis);
  op.attrs.keepdim = get_bool(in, "keepdim");
  for (std::int8_t& p : op.attrs.perm) in(p);
  if (core::op_category(op.kind) == core::OpCategory::kWindow) {
    core::Window& w = op.attrs.window;
    for (auto* v : {&w.kernel, &w.stride, &w.padding, &w.dilation}) in((*v)[0], (*v)[1]);
    in(w.groups);
    w.ceil_mode = get_bool(in, "ceil_mode");
    w.count_include_pad = get_bool(in, "count_include_pad");
  }
  if (!operands_fit_kind(op)) bad(std::string(core::op_name(op.kind)) + " with other operands");
  return op;
}

std::string encode_ops(std::span<const core::OpDesc> ops) {
  return encode_with([&](Out& out) {
    out(static_cast<std::uint32_t>(ops.size()));
    for (const core::OpDesc& op : ops) put_op(out, op);
  });
}

std::vector<core::OpDesc> decode_ops(std::string_view bytes) {
  return decode_with(bytes, [](In& in) {
    std::vector<core::OpDesc> ops;
    for (std::uint32_t n = get_size(in, kMaxOps, "op"); n > 0; --n) ops.push_back(get_op(in));
    return ops;
  });
}

}  // namespace streamfuse::cache
