#include "cache/serialize.h"

#include <type_traits>

#include "backends/cpu/kernels/layout.h"
#include "jit/program_check.h"

namespace streamfuse::cache {
namespace {

using In = InArchive;
using Out = OutArchive;

[[noreturn]] void bad(const std::string& what) { bad_payload(what); }

// Operands of one kernel (backends/cpu/kernels/layout.h): lists past it are rejected before they
// are read.
constexpr std::uint32_t kMaxOperands = backends::cpu::kMaxOperands;

#define SF_COUNT_KIND(name, api, category, arity) +1
constexpr unsigned kNumOpKinds = 0 STREAMFUSE_OP_KINDS(SF_COUNT_KIND);
#undef SF_COUNT_KIND

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
}
core::OpDesc get_op(In& in) {
  core::OpDesc op;
  op.kind = get_enum<core::OpKind>(in, kNumOpKinds, "op kind");
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
  if (!operands_fit_kind(op)) bad(std::string(core::op_name(op.kind)) + " with other operands");
  return op;
}

void put_program(Out& out, const jit::FusedProgram& p) {
  out(static_cast<std::uint32_t>(p.inputs.size()));
  for (DType d : p.inputs) put_enum(out, d);
  out(static_cast<std::uint32_t>(p.scalars.size()));
  for (const jit::ScalarArg& s : p.scalars) {
    put_enum(out, s.mode);
    put_enum(out, s.type);
    put_enum(out, s.dtype);
  }
  out(static_cast<std::uint32_t>(p.body.size()));
  for (const jit::Instruction& in : p.body) {
    put_enum(out, in.kind);
    put_enum(out, in.op);
    put_enum(out, in.type);
    put_enum(out, in.round);
    out(in.out, in.index, in.args[0], in.args[1], in.args[2]);
  }
  out(static_cast<std::uint32_t>(p.outputs.size()));
  for (const jit::ProgramOutput& o : p.outputs) {
    out(o.reg);
    put_enum(out, o.dtype);
  }
  out(p.num_registers);
}

jit::FusedProgram get_program(In& in) {
  jit::FusedProgram p;
  for (std::uint32_t n = get_size(in, kMaxOperands, "program input"); n > 0; --n)
    p.inputs.push_back(get_enum<DType>(in, kNumDTypes, "dtype"));
  for (std::uint32_t n = get_size(in, jit::kMaxScalarArgs, "scalar argument"); n > 0; --n) {
    jit::ScalarArg s;
    s.mode = get_enum<jit::ScalarArg::Mode>(in, 2, "scalar mode");
    s.type = get_enum<jit::ValueType>(in, 4, "value type");
    s.dtype = get_enum<DType>(in, kNumDTypes, "dtype");
    p.scalars.push_back(s);
  }
  for (std::uint32_t n = get_size(in, jit::kMaxInstructions, "instruction"); n > 0; --n) {
    jit::Instruction i;
    i.kind = get_enum<jit::InstrKind>(in, 5, "instruction kind");
    i.op = get_enum<core::OpKind>(in, kNumOpKinds, "op kind");
    i.type = get_enum<jit::ValueType>(in, 4, "value type");
    i.round = get_enum<DType>(in, kNumDTypes, "dtype");
    in(i.out, i.index, i.args[0], i.args[1], i.args[2]);
    if (i.kind == jit::InstrKind::kOp && !core::is_elementwise(i.op)) bad("non-element-wise op");
    p.body.push_back(i);
  }
  for (std::uint32_t n = get_size(in, kMaxOperands, "program output"); n > 0; --n) {
    jit::ProgramOutput o;
    in(o.reg);
    o.dtype = get_enum<DType>(in, kNumDTypes, "dtype");
    p.outputs.push_back(o);
  }
  in(p.num_registers);
  // The interpreter and the code generators assume a well-formed program.
  if (std::string why = jit::program_problem(p); !why.empty()) bad("fused program: " + why);
  return p;
}

void put_key(Out& out, const jit::SpecializationKey& k) {
  out(k.rank);
  const auto put_operands = [&](const auto& list) {
    out(static_cast<std::uint32_t>(list.size()));
    for (const jit::OperandKey& o : list) {
      put_enum(out, o.dtype);
      for (jit::StrideClass c : o.strides) put_enum(out, c);
      out(o.alias);
    }
  };
  put_operands(k.inputs);
  put_operands(k.outputs);
  out(static_cast<std::uint32_t>(k.scalar_classes.size()));
  for (std::uint8_t c : k.scalar_classes) out(c);
  out(k.exact_reciprocals);
}
jit::SpecializationKey get_key(In& in) {
  jit::SpecializationKey k;
  in(k.rank);
  const auto get_operands = [&](auto& list) {
    for (std::uint32_t n = get_size(in, kMaxOperands, "key operand"); n > 0; --n) {
      jit::OperandKey o;
      o.dtype = get_enum<DType>(in, kNumDTypes, "dtype");
      for (jit::StrideClass& c : o.strides) c = get_enum<jit::StrideClass>(in, 3, "stride class");
      in(o.alias);
      list.push_back(o);
    }
  };
  get_operands(k.inputs);
  get_operands(k.outputs);
  const std::uint32_t classes = get_size(in, 256, "scalar class");
  for (std::uint32_t i = 0; i < classes; ++i) {
    std::uint8_t c = 0;
    in(c);
    k.scalar_classes.push_back(c);
  }
  in(k.exact_reciprocals);
  if (std::string why = jit::key_problem(k); !why.empty()) bad("specialization key: " + why);
  return k;
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

std::string encode_program(const jit::FusedProgram& program) {
  return encode_with([&](Out& out) { put_program(out, program); });
}

jit::FusedProgram decode_program(std::string_view bytes) {
  return decode_with(bytes, [](In& in) { return get_program(in); });
}

std::string encode_key(const jit::SpecializationKey& key) {
  return encode_with([&](Out& out) { put_key(out, key); });
}

jit::SpecializationKey decode_key(std::string_view bytes) {
  return decode_with(bytes, [](In& in) { return get_key(in); });
}

}  // namespace streamfuse::cache
