#include "jit/kernel_expressions.h"

#include "core/op_forms.h"
#include "jit/program_optimizer.h"
#include "streamfuse/error.h"

namespace streamfuse::jit {

using core::OpCategory;
using core::OpKind;

void fail_generation(std::string_view function_name, const std::string& why) {
  throw CompileError("jit: cannot generate kernel " + std::string(function_name) + ": " + why);
}

const char* c_type(ValueType t) {
  switch (t) {
    case ValueType::kI32:
      return "int";
    case ValueType::kI64:
      return "long long";
    case ValueType::kBool:
      return "unsigned char";
    case ValueType::kF64:
      return "double";
    default:
      return "float";
  }
}

const char* storage_c_type(DType d) {
  switch (d) {
    case kF16:
    case kBF16:
      return "unsigned short";
    case kI8:
      return "signed char";
    case kU8:
      return "unsigned char";
    default:
      return c_type(value_type_of(d));
  }
}

std::string register_name(std::int32_t r) { return "r" + std::to_string(r); }

// `expr` of value type `from` as value type `to` (convert.h's convert<To, From>).
std::string convert_value(const std::string& expr, ValueType from, ValueType to) {
  if (from == to) return expr;
  if (to == ValueType::kBool) return "(unsigned char)(" + expr + " != 0)";  // NaN is true
  if (from == ValueType::kFloat && to == ValueType::kI32) return "sf_float_to_i32(" + expr + ")";
  if (from == ValueType::kFloat && to == ValueType::kI64) return "sf_float_to_i64(" + expr + ")";
  if (from == ValueType::kF64 && to == ValueType::kI32) return "sf_double_to_i32(" + expr + ")";
  if (from == ValueType::kF64 && to == ValueType::kI64) return "sf_double_to_i64(" + expr + ")";
  const bool integer = from == ValueType::kI32 || from == ValueType::kI64;
  if (integer && to == ValueType::kFloat) return "sf_int_to_float(" + expr + ")";
  if (integer && to == ValueType::kF64) return "sf_int_to_double(" + expr + ")";
  return "(" + std::string(c_type(to)) + ")(" + expr + ")";  // int/bool to float, int wraps
}

// An element of storage dtype `d` (expression `access`) as value type `to`.
std::string load_value(const std::string& access, DType d, ValueType to) {
  if (d == kF16) return convert_value("sf_half_to_float(" + access + ")", ValueType::kFloat, to);
  if (d == kBF16) return convert_value("sf_bf16_to_float(" + access + ")", ValueType::kFloat, to);
  return convert_value(access, value_type_of(d), to);
}

// Register value `expr` of type `from` as storage of dtype `d`. To i8 and u8 through the wrap
// (a register of that dtype already holds a wrapped value; a convert from another type does not),
// then an explicit narrowing cast, exact on a wrapped value.
std::string store_value(const std::string& expr, ValueType from, DType d) {
  const std::string v = convert_value(expr, from, value_type_of(d));
  if (d == kF16) return "sf_float_to_half(" + v + ")";
  if (d == kBF16) return "sf_float_to_bf16(" + v + ")";
  if (d == kI8) return "(signed char)sf_wrap_i8(" + v + ")";
  if (d == kU8) return "(unsigned char)sf_wrap_u8(" + v + ")";
  return v;
}

std::string scalar_value(const std::string& bits, ValueType t) {
  switch (t) {
    case ValueType::kFloat:
      return "SF_MATH_AS_FLOAT((unsigned int)" + bits + ")";  // a prelude macro, CPU or CUDA
    case ValueType::kI32:
      return "(int)" + bits;
    case ValueType::kI64:
      return bits;
    case ValueType::kBool:
      return "(unsigned char)" + bits;
    case ValueType::kF64:
      return "SF_MATH_AS_DOUBLE((unsigned long long)" + bits + ")";
  }
  return bits;
}

namespace {

// The prelude's function of each op (core/op_math.h): sf_op_<Kind>, named after the OpKind.
constexpr const char* kOpMathNames[] = {
#define STREAMFUSE_X(name, api, category, arity) "sf_op_" #name,
    STREAMFUSE_OP_KINDS(STREAMFUSE_X)
#undef STREAMFUSE_X
};

// The call of op `k` computed in `t` over registers a, b, c; empty when `t` has no form. The
// math is the prelude's (core/op_math.h), the same the eager kernels instantiate.
std::string op_expr(core::OpKind k, ValueType t, const std::string& a, const std::string& b,
                    const std::string& c) {
  if (!has_form(k, t)) return {};
  const std::string f = kOpMathNames[static_cast<std::size_t>(k)];
  switch (core::op_info(k).arity) {
    case 1:
      return f + "(" + a + ")";
    case 2:
      return f + "(" + a + ", " + b + ")";
    default:  // where
      return f + "(" + a + ", " + b + ", " + c + ")";
  }
}

}  // namespace

std::string reduce_op_type(core::OpKind op, ValueType t) {
  const char* v = c_type(t);
  const bool f = t == ValueType::kFloat;
  if (t == ValueType::kF64) {
    switch (op) {
      case OpKind::kSum:
      case OpKind::kMean:
        return "sf_sum_f64";
      case OpKind::kMax:
        return "sf_extreme_f64<1>";
      case OpKind::kMin:
        return "sf_extreme_f64<0>";
      case OpKind::kArgmax:
        return "sf_argmax_f64";
      default:
        return {};
    }
  }
  switch (op) {
    case OpKind::kSum:
    case OpKind::kMean:
      return f ? "sf_sum_float" : "sf_sum_int";
    case OpKind::kMax:
      return f ? std::string("sf_extreme_float<1>") : "sf_extreme_int<" + std::string(v) + ", 1>";
    case OpKind::kMin:
      return f ? std::string("sf_extreme_float<0>") : "sf_extreme_int<" + std::string(v) + ", 0>";
    case OpKind::kArgmax:
      return f ? std::string("sf_argmax_float") : "sf_argmax_int<" + std::string(v) + ">";
    default:
      return {};
  }
}

std::string reduce_result_bits(core::OpKind op, const std::string& acc, const std::string& count,
                               const std::string& op_type) {
  const std::string results = "sf_reduce_results<" + op_type + " >::";
  if (op == OpKind::kMean) return "sf_reduce_bits(" + results + "mean(" + acc + ", " + count + "))";
  return "sf_reduce_bits(" + results + "value(" + acc + "))";
}

bool has_form(core::OpKind k, ValueType t) {
  const core::OpForms forms = core::op_forms(k);
  switch (t) {
    case ValueType::kFloat:
    case ValueType::kF64:
      return forms.floating;
    case ValueType::kI32:
    case ValueType::kI64:
      return forms.integer;
    case ValueType::kBool:
      return forms.boolean;
  }
  return false;
}

void check_program(const FusedProgram& p, const SpecializationKey& key, std::string_view name) {
  if (key.rank < 0 || key.rank > kMaxRank)
    fail_generation(name, "rank " + std::to_string(key.rank));
  if (key.inputs.size() != p.inputs.size() || key.outputs.size() != p.outputs.size())
    fail_generation(name, "the key has " + std::to_string(key.inputs.size()) + " inputs and " +
                              std::to_string(key.outputs.size()) + " outputs, the program " +
                              std::to_string(p.inputs.size()) + " and " +
                              std::to_string(p.outputs.size()));
  for (std::size_t k = 0; k < p.inputs.size() + p.outputs.size(); ++k) {
    const bool out = k >= p.inputs.size();
    const DType program_dtype = out ? p.outputs[k - p.inputs.size()].dtype : p.inputs[k];
    const DType key_dtype = out ? key.outputs[k - p.inputs.size()].dtype : key.inputs[k].dtype;
    if (key_dtype != program_dtype)
      fail_generation(name, "operand " + std::to_string(k) + " is " +
                                std::string(dtype_name(key_dtype)) + " in the key but " +
                                std::string(dtype_name(program_dtype)) + " in the program");
  }
  // With no anchor the code generators write one loop over the iteration shape, running the
  // prologue: all the code. A reduction adds rows (jit/cpp_reduce_codegen.cpp).
  switch (p.anchor.kind) {
    case AnchorKind::kNone:
      if (!p.epilogue.empty()) fail_generation(name, "an epilogue with no anchor");
      break;
    case AnchorKind::kReduce:
      if (p.anchor.stages.empty() || p.anchor.stages.size() > kMaxReduceStages)
        fail_generation(name,
                        "a reduction of " + std::to_string(p.anchor.stages.size()) + " stages");
      for (const ReduceStage& st : p.anchor.stages)
        if (st.input < 0 || st.input >= p.num_registers)
          fail_generation(name, "stage register out of range");
      break;
  }
  for (const std::vector<Instruction>* block : p.blocks())
    for (const Instruction& in : *block) {
      if (in.out < 0 || in.out >= p.num_registers) fail_generation(name, "register out of range");
      for (std::int32_t a : in.args)
        if (a >= p.num_registers) fail_generation(name, "register out of range");
      if ((in.kind == InstrKind::kLoad || in.kind == InstrKind::kLoadAt) &&
          (in.index < 0 || in.index >= static_cast<int>(p.inputs.size())))
        fail_generation(name, "load of input " + std::to_string(in.index));
      if (in.kind == InstrKind::kScalar &&
          (in.index < 0 || in.index >= static_cast<int>(p.scalars.size())))
        fail_generation(name, "scalar argument " + std::to_string(in.index));
    }
  for (const ProgramOutput& o : p.outputs)
    if (o.reg < 0 || o.reg >= p.num_registers)
      fail_generation(name, "output register out of range");
}

std::string instruction_line(const FusedProgram& p, const Instruction& in,
                             const std::vector<ValueType>& types,
                             const std::function<std::string(std::size_t)>& element,
                             std::string_view name, const ShiftedElement& shifted) {
  const auto arg = [&](int j) {
    return in.args[j] >= 0 ? register_name(in.args[j]) : std::string();
  };
  const auto arg_type = [&](int j) { return types[static_cast<std::size_t>(in.args[j])]; };
  std::string expr;
  switch (in.kind) {
    case InstrKind::kLoad: {
      const auto j = static_cast<std::size_t>(in.index);
      expr = load_value(element(j), p.inputs[j], in.type);
      break;
    }
    case InstrKind::kConvert:
      expr = convert_value(arg(0), arg_type(0), in.type);
      break;
    case InstrKind::kRound:
      switch (in.round) {
        case kF16:
          expr = "sf_round_f16(" + arg(0) + ")";
          break;
        case kBF16:
          expr = "sf_round_bf16(" + arg(0) + ")";
          break;
        case kI8:
          expr = "sf_wrap_i8(" + arg(0) + ")";
          break;
        case kU8:
          expr = "sf_wrap_u8(" + arg(0) + ")";
          break;
        default:
          fail_generation(name, "round to " + std::string(dtype_name(in.round)));
      }
      break;
    case InstrKind::kOp: {
      const int arity = core::op_info(in.op).arity;
      for (int j = 0; j < arity; ++j)
        if (in.args[j] < 0)
          fail_generation(name, "op " + std::string(core::op_name(in.op)) + " lacks operands");
      expr = op_expr(in.op, in.type, arg(0), arg(1), arg(2));
      if (expr.empty())
        fail_generation(name, "op " + std::string(core::op_name(in.op)) + " has no " +
                                  value_type_name(in.type) + " form");
      break;
    }
    case InstrKind::kReduced:
      expr = scalar_value("res[" + std::to_string(in.index) + "]", in.type);
      break;
    case InstrKind::kLoadAt: {
      if (!shifted) fail_generation(name, "an indexed load where this generator has none");
      if (in.args[0] < 0 || in.args[1] < 0) fail_generation(name, "an indexed load lacks operands");
      const auto j = static_cast<std::size_t>(in.index);
      expr = load_value(shifted(j, "(long long)" + arg(0) + " * " + arg(1)), p.inputs[j], in.type);
      break;
    }
    case InstrKind::kScalar:
      break;
  }
  return std::string("const ") + c_type(types[static_cast<std::size_t>(in.out)]) + " " +
         register_name(in.out) + " = " + expr + ";";
}

std::string scalar_line(const FusedProgram& p, const Instruction& in, std::string_view scalars) {
  const ValueType from = p.scalars[static_cast<std::size_t>(in.index)].type;
  const std::string bits = std::string(scalars) + "[" + std::to_string(in.index) + "]";
  return std::string("const ") + c_type(in.type) + " " + register_name(in.out) + " = " +
         convert_value(scalar_value(bits, from), from, in.type) + ";";
}

FusedProgram specialize(const FusedProgram& program, const SpecializationKey& key,
                        std::string_view name) {
  // Reciprocals first: their bits name the program's own argument indices.
  FusedProgram specialized = program;
  if (key.exact_reciprocals != 0) multiply_by_exact_reciprocals(specialized, key.exact_reciprocals);
  if (!key.scalar_classes.empty()) {
    if (key.scalar_classes.size() != program.scalars.size())
      fail_generation(name, "the key's scalar classes do not fit the program");
    merge_equal_scalars(specialized, key.scalar_classes);
  }
  return specialized;
}

}  // namespace streamfuse::jit
