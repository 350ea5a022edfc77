#include "cache/prepared_op_codec.h"

#include "cache/serialize.h"

namespace streamfuse::cache {

void put_prepared_ops(OutArchive& out, const std::vector<backends::PreparedOp>& ops) {
  out(static_cast<std::uint32_t>(ops.size()));
  for (const backends::PreparedOp& p : ops) {
    put_op(out, p.op);
    out(static_cast<std::uint32_t>(p.input_strides.size()));
    for (const auto& strides : p.input_strides)
      for (std::int64_t s : strides) out(s);
  }
}

std::vector<backends::PreparedOp> get_prepared_ops(InArchive& in) {
  std::vector<backends::PreparedOp> ops(get_size(in, kMaxItems, "prepared op"));
  for (backends::PreparedOp& p : ops) {
    p.op = get_op(in);
    if (p.op.kind != stream::OpKind::kMatmul || p.op.inputs.size() != 2 || p.op.outputs.size() != 1)
      bad_payload("prepared op " + std::string(stream::op_name(p.op.kind)));
    p.input_strides.resize(get_size(in, 2, "prepared op operand"));
    if (p.input_strides.size() != p.op.inputs.size()) bad_payload("prepared op strides");
    for (auto& strides : p.input_strides)
      for (std::int64_t& s : strides) in(s);
  }
  return ops;
}

std::string encode_prepared_ops(const std::vector<backends::PreparedOp>& ops) {
  return encode_with([&](OutArchive& out) { put_prepared_ops(out, ops); });
}

std::vector<backends::PreparedOp> decode_prepared_ops(std::string_view bytes) {
  return decode_with(bytes, [](InArchive& in) { return get_prepared_ops(in); });
}

}  // namespace streamfuse::cache
