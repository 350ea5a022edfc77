#include "jit/program_codec.h"

#include "backends/cpu/kernels/layout.h"
#include "jit/program_check.h"

namespace streamfuse::jit {
namespace {

using In = cache::InArchive;
using Out = cache::OutArchive;

[[noreturn]] void bad(const std::string& what) { cache::bad_payload(what); }

// Operands of one kernel (backends/cpu/kernels/layout.h): lists past it are rejected before they
// are read.
constexpr std::uint32_t kMaxOperands = backends::cpu::kMaxOperands;

void put_block(Out& out, const std::vector<Instruction>& block) {
  out(static_cast<std::uint32_t>(block.size()));
  for (const Instruction& in : block) {
    cache::put_enum(out, in.kind);
    cache::put_enum(out, in.op);
    cache::put_enum(out, in.type);
    cache::put_enum(out, in.round);
    out(in.out, in.index, in.args[0], in.args[1], in.args[2]);
  }
}

std::vector<Instruction> get_block(In& in) {
  std::vector<Instruction> block;  // not reserved: a count that lies must not allocate
  for (std::uint32_t n = cache::get_size(in, kMaxInstructions, "instruction"); n > 0; --n) {
    Instruction i;
    i.kind = cache::get_enum<InstrKind>(in, kNumInstrKinds, "instruction kind");
    i.op = cache::get_enum<core::OpKind>(in, core::kNumOpKinds, "op kind");
    i.type = cache::get_enum<ValueType>(in, kNumValueTypes, "value type");
    i.round = cache::get_enum<DType>(in, kNumDTypes, "dtype");
    in(i.out, i.index, i.args[0], i.args[1], i.args[2]);
    if (i.kind == InstrKind::kOp && !core::is_elementwise(i.op)) bad("non-element-wise op");
    block.push_back(i);
  }
  return block;
}

}  // namespace

void put_program(Out& out, const FusedProgram& p) {
  out(static_cast<std::uint32_t>(p.inputs.size()));
  for (DType d : p.inputs) cache::put_enum(out, d);
  out(static_cast<std::uint32_t>(p.scalars.size()));
  for (const ScalarArg& s : p.scalars) {
    cache::put_enum(out, s.mode);
    cache::put_enum(out, s.type);
    cache::put_enum(out, s.dtype);
  }
  put_block(out, p.prologue);
  cache::put_enum(out, p.anchor.kind);
  out(p.anchor.axis);
  out(static_cast<std::uint32_t>(p.anchor.stages.size()));
  for (const ReduceStage& st : p.anchor.stages) {
    cache::put_enum(out, st.op);
    cache::put_enum(out, st.dtype);
    out(st.input);
  }
  put_block(out, p.epilogue);
  out(static_cast<std::uint32_t>(p.outputs.size()));
  for (const ProgramOutput& o : p.outputs) {
    out(o.reg);
    cache::put_enum(out, o.dtype);
    out(static_cast<std::uint8_t>(o.per_row));
  }
  out(p.num_registers);
}

FusedProgram get_program(In& in) {
  FusedProgram p;
  for (std::uint32_t n = cache::get_size(in, kMaxOperands, "program input"); n > 0; --n)
    p.inputs.push_back(cache::get_enum<DType>(in, kNumDTypes, "dtype"));
  for (std::uint32_t n = cache::get_size(in, kMaxScalarArgs, "scalar argument"); n > 0; --n) {
    ScalarArg s;
    s.mode = cache::get_enum<ScalarArg::Mode>(in, 2, "scalar mode");
    s.type = cache::get_enum<ValueType>(in, kNumValueTypes, "value type");
    s.dtype = cache::get_enum<DType>(in, kNumDTypes, "dtype");
    p.scalars.push_back(s);
  }
  p.prologue = get_block(in);
  p.anchor.kind = cache::get_enum<AnchorKind>(in, kNumAnchorKinds, "anchor kind");
  in(p.anchor.axis);
  for (std::uint32_t n = cache::get_size(in, kMaxReduceStages, "reduction stage"); n > 0; --n) {
    ReduceStage st;
    st.op = cache::get_enum<core::OpKind>(in, core::kNumOpKinds, "op kind");
    st.dtype = cache::get_enum<DType>(in, kNumDTypes, "dtype");
    in(st.input);
    p.anchor.stages.push_back(st);
  }
  p.epilogue = get_block(in);
  for (std::uint32_t n = cache::get_size(in, kMaxOperands, "program output"); n > 0; --n) {
    ProgramOutput o;
    in(o.reg);
    o.dtype = cache::get_enum<DType>(in, kNumDTypes, "dtype");
    o.per_row = cache::get_bool(in, "per-row output");
    p.outputs.push_back(o);
  }
  in(p.num_registers);
  // The interpreter and the code generators assume a well-formed program.
  if (std::string why = program_problem(p); !why.empty()) bad("fused program: " + why);
  return p;
}

void put_key(Out& out, const SpecializationKey& k) {
  out(k.rank);
  const auto put_operands = [&](const auto& list) {
    out(static_cast<std::uint32_t>(list.size()));
    for (const OperandKey& o : list) {
      cache::put_enum(out, o.dtype);
      for (StrideClass c : o.strides) cache::put_enum(out, c);
      out(o.alias);
    }
  };
  put_operands(k.inputs);
  put_operands(k.outputs);
  out(static_cast<std::uint32_t>(k.scalar_classes.size()));
  for (std::uint8_t c : k.scalar_classes) out(c);
  out(k.exact_reciprocals);
}
SpecializationKey get_key(In& in) {
  SpecializationKey k;
  in(k.rank);
  const auto get_operands = [&](auto& list) {
    for (std::uint32_t n = cache::get_size(in, kMaxOperands, "key operand"); n > 0; --n) {
      OperandKey o;
      o.dtype = cache::get_enum<DType>(in, kNumDTypes, "dtype");
      for (StrideClass& c : o.strides) c = cache::get_enum<StrideClass>(in, 3, "stride class");
      in(o.alias);
      list.push_back(o);
    }
  };
  get_operands(k.inputs);
  get_operands(k.outputs);
  const std::uint32_t classes = cache::get_size(in, 256, "scalar class");
  for (std::uint32_t i = 0; i < classes; ++i) {
    std::uint8_t c = 0;
    in(c);
    k.scalar_classes.push_back(c);
  }
  in(k.exact_reciprocals);
  if (std::string why = key_problem(k); !why.empty()) bad("specialization key: " + why);
  return k;
}

std::string encode_program(const FusedProgram& program) {
  return cache::encode_with([&](Out& out) { put_program(out, program); });
}

FusedProgram decode_program(std::string_view bytes) {
  return cache::decode_with(bytes, [](In& in) { return get_program(in); });
}

std::string encode_key(const SpecializationKey& key) {
  return cache::encode_with([&](Out& out) { put_key(out, key); });
}

SpecializationKey decode_key(std::string_view bytes) {
  return cache::decode_with(bytes, [](In& in) { return get_key(in); });
}

}  // namespace streamfuse::jit
