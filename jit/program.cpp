#include "jit/program.h"

#include <sstream>

#include "core/hash_mix.h"
#include "core/scalar_values.h"

namespace streamfuse::jit {
ValueType value_type_of(DType d) {
  switch (d) {
    case kI32:
    case kI8:
    case kU8:
      return ValueType::kI32;
    case kI64:
      return ValueType::kI64;
    case kBool:
      return ValueType::kBool;
    case kF64:
      return ValueType::kF64;
    default:
      return ValueType::kFloat;
  }
}

DType storage_dtype_of(ValueType t) {
  switch (t) {
    case ValueType::kI32:
      return kI32;
    case ValueType::kI64:
      return kI64;
    case ValueType::kBool:
      return kBool;
    case ValueType::kF64:
      return kF64;
    default:
      return kF32;
  }
}

const char* value_type_name(ValueType t) {
  switch (t) {
    case ValueType::kI32:
      return "i32";
    case ValueType::kI64:
      return "i64";
    case ValueType::kBool:
      return "bool";
    case ValueType::kF64:
      return "f64";
    default:
      return "float";
  }
}

const char* anchor_kind_name(AnchorKind kind) {
  switch (kind) {
    case AnchorKind::kNone:
      return "none";
    case AnchorKind::kReduce:
      return "reduce";
  }
  return "?";
}

std::vector<ValueType> FusedProgram::register_types() const {
  std::vector<ValueType> types(static_cast<std::size_t>(num_registers), ValueType::kFloat);
  for (const std::vector<Instruction>* block : blocks()) {
    for (const Instruction& in : *block) {
      ValueType t = in.type;
      if (in.kind == InstrKind::kOp) {
        const core::OpCategory c = core::op_category(in.op);
        if (c == core::OpCategory::kCompare || c == core::OpCategory::kLogical)
          t = ValueType::kBool;
      }
      types[static_cast<std::size_t>(in.out)] = t;
    }
  }
  return types;
}

std::uint64_t FusedProgram::hash() const {
  std::uint64_t h =
      core::hash_mix(0, inputs.size() | (scalars.size() << 16) | (outputs.size() << 32));
  for (DType d : inputs) h = core::hash_mix(h, static_cast<std::uint64_t>(d));
  for (const ScalarArg& s : scalars)
    h = core::hash_mix(h, static_cast<std::uint64_t>(s.mode) |
                              (static_cast<std::uint64_t>(s.type) << 8) |
                              (static_cast<std::uint64_t>(s.dtype) << 16));
  // Each block with its length, then the anchor: no two programs share a sequence.
  for (const std::vector<Instruction>* block : blocks()) {
    h = core::hash_mix(h, block->size());
    for (const Instruction& in : *block) {
      h = core::hash_mix(
          h, static_cast<std::uint64_t>(in.kind) | (static_cast<std::uint64_t>(in.op) << 8) |
                 (static_cast<std::uint64_t>(in.type) << 16) |
                 (static_cast<std::uint64_t>(in.round) << 24) |
                 (static_cast<std::uint64_t>(static_cast<std::uint32_t>(in.out)) << 32));
      h = core::hash_mix(h, static_cast<std::uint64_t>(static_cast<std::uint32_t>(in.index)));
      for (std::int32_t a : in.args)
        h = core::hash_mix(h, static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)));
    }
  }
  h = core::hash_mix(h,
                     static_cast<std::uint64_t>(anchor.kind) |
                         (static_cast<std::uint64_t>(static_cast<std::uint8_t>(anchor.axis)) << 8) |
                         (static_cast<std::uint64_t>(anchor.stages.size()) << 16));
  for (const ReduceStage& st : anchor.stages)
    h = core::hash_mix(
        h, static_cast<std::uint64_t>(st.op) | (static_cast<std::uint64_t>(st.dtype) << 8) |
               (static_cast<std::uint64_t>(static_cast<std::uint32_t>(st.input)) << 32));
  for (const ProgramOutput& o : outputs)
    h = core::hash_mix(h, static_cast<std::uint64_t>(static_cast<std::uint32_t>(o.reg)) |
                              (static_cast<std::uint64_t>(o.dtype) << 32) |
                              (static_cast<std::uint64_t>(o.per_row) << 40));
  return core::hash_mix(h, static_cast<std::uint64_t>(num_registers));
}

std::string FusedProgram::to_string() const {
  std::ostringstream os;
  auto print = [&](const Instruction& in) {
    os << 'r' << in.out << " = ";
    switch (in.kind) {
      case InstrKind::kLoad:
        os << "load in" << in.index << ':' << dtype_name(inputs[static_cast<std::size_t>(in.index)])
           << " as " << value_type_name(in.type);
        break;
      case InstrKind::kScalar:
        os << "scalar s" << in.index << ':' << value_type_name(in.type);
        break;
      case InstrKind::kOp:
        os << core::op_name(in.op) << '.' << value_type_name(in.type) << '(';
        for (int a = 0; a < 3 && in.args[a] >= 0; ++a) os << (a ? ", r" : "r") << in.args[a];
        os << ')';
        break;
      case InstrKind::kConvert:
        os << "convert r" << in.args[0] << " to " << value_type_name(in.type);
        break;
      case InstrKind::kRound:
        os << "round r" << in.args[0] << " to " << dtype_name(in.round);
        break;
      case InstrKind::kReduced:
        os << "reduced stage" << in.index << " as " << value_type_name(in.type);
        break;
      case InstrKind::kLoadAt:
        os << "load in" << in.index << ':' << dtype_name(inputs[static_cast<std::size_t>(in.index)])
           << " at r" << in.args[0] << " * r" << in.args[1] << " as " << value_type_name(in.type);
        break;
    }
    os << '\n';
  };
  for (const Instruction& in : prologue) print(in);
  if (anchor.kind != AnchorKind::kNone) {
    os << "anchor " << anchor_kind_name(anchor.kind);
    if (anchor.kind == AnchorKind::kReduce)
      os << " axis "
         << (anchor.axis == core::kAllAxes ? std::string("all") : std::to_string(anchor.axis));
    os << '\n';
    for (std::size_t k = 0; k < anchor.stages.size(); ++k)
      os << "stage" << k << " = " << core::op_name(anchor.stages[k].op) << ' '
         << dtype_name(anchor.stages[k].dtype) << " r" << anchor.stages[k].input << '\n';
  }
  for (const Instruction& in : epilogue) print(in);
  for (std::size_t i = 0; i < outputs.size(); ++i)
    os << "store out" << i << ':' << dtype_name(outputs[i].dtype)
       << (outputs[i].per_row ? " per row" : "") << " = r" << outputs[i].reg << '\n';
  return os.str();
}

std::int64_t scalar_bits(const ScalarArg& arg, const Scalar& s) {
  if (arg.mode == ScalarArg::Mode::kFill) return core::fill_scalar_bits(s, arg.dtype);
  return core::operand_scalar_bits(s, storage_dtype_of(arg.type));
}

ProgramFacts ProgramFacts::of(const FusedProgram& program) {
  ProgramFacts facts;
  facts.hash = program.hash();
  std::vector<std::int32_t> scalar_of(static_cast<std::size_t>(program.num_registers), -1);
  for (const std::vector<Instruction>* block : program.blocks()) {
    for (const Instruction& in : *block) {
      if (in.kind == InstrKind::kScalar && in.type == ValueType::kFloat)
        scalar_of[static_cast<std::size_t>(in.out)] = in.index;
      if (in.kind != InstrKind::kOp || in.op != core::OpKind::kDiv || in.type != ValueType::kFloat)
        continue;
      const std::int32_t s = scalar_of[static_cast<std::size_t>(in.args[1])];
      if (s >= 0 && s < 64 &&
          program.scalars[static_cast<std::size_t>(s)].type == ValueType::kFloat)
        facts.divisor_scalars |= std::uint64_t{1} << s;
    }
  }
  return facts;
}

}  // namespace streamfuse::jit
