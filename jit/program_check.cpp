#include "jit/program_check.h"

#include <algorithm>
#include <vector>

#include "backends/cpu/kernels/layout.h"
#include "jit/kernel_expressions.h"
#include "jit/reduce_program.h"

namespace streamfuse::jit {
namespace {

using core::OpCategory;

std::string at(std::size_t i, const std::string& what) {
  return "instruction " + std::to_string(i) + ": " + what;
}

// Registers read by `in`: its kind's operand count.
int arity(const Instruction& in) {
  switch (in.kind) {
    case InstrKind::kLoad:
    case InstrKind::kScalar:
    case InstrKind::kReduced:
      return 0;
    case InstrKind::kOp:
      return core::op_info(in.op).arity;
    case InstrKind::kConvert:
    case InstrKind::kRound:
      return 1;
    case InstrKind::kLoadAt:
      return 2;
  }
  return 0;
}

// The type operand `a` of `in` must have (kOp and kRound; a kConvert reads any type).
ValueType operand_type(const Instruction& in, int a) {
  if (in.kind == InstrKind::kRound) return value_type_of(in.round);
  if (in.kind == InstrKind::kLoadAt) return ValueType::kI64;  // the stride; the index: see below
  const core::OpCategory c = core::op_category(in.op);
  if (c == core::OpCategory::kLogical || (c == core::OpCategory::kSelect && a == 0))
    return ValueType::kBool;
  return in.type;
}

// Why instruction `in` (number i) does not fit the registers written before it (`types`,
// `written`), or empty.
std::string instruction_problem(const FusedProgram& p, std::size_t i, const Instruction& in,
                                const std::vector<ValueType>& types,
                                const std::vector<char>& written) {
  const auto regs = static_cast<std::int32_t>(written.size());
  if (in.out < 0 || in.out >= regs) return at(i, "writes register " + std::to_string(in.out));
  if (written[static_cast<std::size_t>(in.out)])
    return at(i, "writes register " + std::to_string(in.out) + " again");
  const int n = arity(in);
  if (n < 0 || n > 3) return at(i, "an op of no fixed operand count");
  for (int a = 0; a < 3; ++a) {
    const std::int32_t r = in.args[a];
    if (a >= n) {
      if (r != -1) return at(i, "an operand past its op's");
      continue;
    }
    if (r < 0 || r >= regs || !written[static_cast<std::size_t>(r)])
      return at(i, "reads register " + std::to_string(r) + " before it is written");
    if (in.kind == InstrKind::kLoadAt && a == 0) {
      const ValueType t = types[static_cast<std::size_t>(r)];
      if (t != ValueType::kI32 && t != ValueType::kI64)
        return at(i, std::string("an index of type ") + value_type_name(t));
      continue;
    }
    if (in.kind != InstrKind::kConvert && types[static_cast<std::size_t>(r)] != operand_type(in, a))
      return at(i, "operand " + std::to_string(a) + " is " +
                       value_type_name(types[static_cast<std::size_t>(r)]) + ", not " +
                       value_type_name(operand_type(in, a)));
  }
  switch (in.kind) {
    case InstrKind::kLoad:
    case InstrKind::kLoadAt:
      if (in.index < 0 || static_cast<std::size_t>(in.index) >= p.inputs.size())
        return at(i, "loads input " + std::to_string(in.index));
      if (in.kind == InstrKind::kLoadAt && p.anchor.kind != AnchorKind::kNone)
        return at(i, "an indexed load in a kernel with an anchor");
      break;
    case InstrKind::kScalar:
      if (in.index < 0 || static_cast<std::size_t>(in.index) >= p.scalars.size())
        return at(i, "reads scalar argument " + std::to_string(in.index));
      // The interpreter copies the argument's bits as they are: they must be of this type.
      if (p.scalars[static_cast<std::size_t>(in.index)].type != in.type)
        return at(i, "reads a scalar argument of another type");
      break;
    case InstrKind::kOp:
      // A cast is a kConvert: no op loop or expression computes kCast.
      if (!core::is_elementwise(in.op) || core::op_category(in.op) == core::OpCategory::kCast)
        return at(i, std::string(core::op_name(in.op)) + " is not an element-wise op");
      if (core::op_category(in.op) == core::OpCategory::kLogical && in.type != ValueType::kBool)
        return at(i, "a logical op computed in " + std::string(value_type_name(in.type)));
      if (!has_form(in.op, in.type))
        return at(
            i, std::string(core::op_name(in.op)) + " has no " + value_type_name(in.type) + " form");
      break;
    case InstrKind::kConvert:
      break;
    case InstrKind::kRound:
      if (!rounds_in_registers(in.round) || in.type != value_type_of(in.round))
        return at(i, "rounds to " + std::string(dtype_name(in.round)) + " in " +
                         value_type_name(in.type));
      break;
    case InstrKind::kReduced: {
      if (in.index < 0 || static_cast<std::size_t>(in.index) >= p.anchor.stages.size())
        return at(i, "reads stage " + std::to_string(in.index));
      const ReduceStage& st = p.anchor.stages[static_cast<std::size_t>(in.index)];
      if (in.type != value_type_of(core::reduced_dtype(st.op, st.dtype)))
        return at(i, "reads a stage result as " + std::string(value_type_name(in.type)));
      break;
    }
  }
  return {};
}

bool is_reduction(core::OpKind op) { return core::op_category(op) == core::OpCategory::kReduce; }

// Why a kReduce program's stages do not fit its code, or empty: each reduces a register of its
// dtype's value type that needs only earlier stages' results, written by per-element code or by
// per-row code (a constant's scalar, which is per-row code as every scalar; a per-row value read
// as the element it broadcasts to, where the axis has one element), and kReduced instructions are
// per-row code. A row's code that needs k stages runs before stage k, in the interpreter and in
// both generators. `types` and `needs` (per register: how many stages must have run before it
// can be computed) come from the instructions.
std::string stage_problem(const FusedProgram& p, const std::vector<ValueType>& types,
                          const std::vector<std::size_t>& needs) {
  const auto& stages = p.anchor.stages;
  if (stages.empty() || stages.size() > kMaxReduceStages)
    return std::to_string(stages.size()) + " reduction stages";
  if (p.anchor.axis < core::kAllAxes || p.anchor.axis >= kMaxRank)
    return "reduction axis " + std::to_string(p.anchor.axis);
  std::vector<char> per_element(static_cast<std::size_t>(p.num_registers), 0);
  std::vector<char> per_row(static_cast<std::size_t>(p.num_registers), 0);
  for (const Instruction& in : p.prologue) {
    if (in.kind == InstrKind::kReduced) return "a stage result read per element";
    per_element[static_cast<std::size_t>(in.out)] = 1;
  }
  for (const Instruction& in : p.epilogue) per_row[static_cast<std::size_t>(in.out)] = 1;
  for (std::size_t k = 0; k < stages.size(); ++k) {
    const ReduceStage& st = stages[k];
    const std::string which = "stage " + std::to_string(k);
    if (!is_reduction(st.op)) return which + " is " + std::string(core::op_name(st.op));
    if (st.input < 0 || st.input >= p.num_registers)
      return which + " reduces register " + std::to_string(st.input);
    const auto r = static_cast<std::size_t>(st.input);
    if (!per_element[r] && !per_row[r])
      return which + " reduces register " + std::to_string(st.input) + ", which nothing writes";
    if (types[r] != value_type_of(st.dtype))
      return which + " reduces a " + value_type_name(types[r]) + " register as " +
             std::string(dtype_name(st.dtype));
    if (needs[r] > k) return which + " reduces a value that needs its own or a later result";
  }
  return {};
}

}  // namespace

std::string program_problem(const FusedProgram& p) {
  if (p.inputs.size() + p.outputs.size() > static_cast<std::size_t>(backends::cpu::kMaxOperands))
    return std::to_string(p.inputs.size() + p.outputs.size()) + " operands";
  if (p.scalars.size() > kMaxScalarArgs)
    return std::to_string(p.scalars.size()) + " scalar arguments";
  const std::size_t instructions = p.prologue.size() + p.epilogue.size();
  if (instructions > kMaxInstructions) return std::to_string(instructions) + " instructions";
  // Each register is written by one instruction: no more registers than instructions.
  if (p.num_registers < 0 || static_cast<std::size_t>(p.num_registers) > instructions)
    return std::to_string(p.num_registers) + " registers for " + std::to_string(instructions) +
           " instructions";
  // One form per kernel (so one hash and one key): with no anchor, all the code is the prologue.
  switch (p.anchor.kind) {
    case AnchorKind::kNone:
      if (!p.epilogue.empty()) return "an epilogue with no anchor";
      if (!p.anchor.stages.empty() || p.anchor.axis != 0) return "reduction stages with no anchor";
      break;
    case AnchorKind::kReduce:
      break;
  }
  for (std::size_t s = 0; s < p.scalars.size(); ++s) {
    const ScalarArg& a = p.scalars[s];
    // As emit_elementwise_op and the builders make them: an operand is read as its type (its
    // dtype unused, f32), a fill as its dtype's value type.
    if (a.mode == ScalarArg::Mode::kFill ? a.type != value_type_of(a.dtype) : a.dtype != kF32)
      return "scalar argument " + std::to_string(s) + " of mismatched type and dtype";
  }
  const auto n = static_cast<std::size_t>(p.num_registers);
  std::vector<ValueType> types(n, ValueType::kFloat);
  std::vector<char> written(n, 0);
  std::size_t i = 0;  // instructions are numbered through the blocks, in dependency order
  for (const std::vector<Instruction>* block : p.blocks()) {
    for (const Instruction& in : *block) {
      if (std::string why = instruction_problem(p, i, in, types, written); !why.empty()) return why;
      ValueType result = in.type;
      if (in.kind == InstrKind::kOp) {
        const core::OpCategory c = core::op_category(in.op);
        if (c == core::OpCategory::kCompare || c == core::OpCategory::kLogical)
          result = ValueType::kBool;
      }
      types[static_cast<std::size_t>(in.out)] = result;
      written[static_cast<std::size_t>(in.out)] = 1;
      ++i;
    }
  }
  if (p.anchor.kind == AnchorKind::kReduce)
    if (std::string why = stage_problem(p, types, stages_needed(p)); !why.empty()) return why;
  for (std::size_t o = 0; o < p.outputs.size(); ++o) {
    const ProgramOutput& out = p.outputs[o];
    if (out.reg < 0 || static_cast<std::size_t>(out.reg) >= n ||
        !written[static_cast<std::size_t>(out.reg)])
      return "output " + std::to_string(o) + " reads register " + std::to_string(out.reg) +
             ", which nothing writes";
    if (out.per_row && (p.anchor.kind != AnchorKind::kReduce ||
                        std::none_of(p.epilogue.begin(), p.epilogue.end(),
                                     [&](const Instruction& in) { return in.out == out.reg; })))
      return "output " + std::to_string(o) + " is per row but not of per-row code";
    if (types[static_cast<std::size_t>(out.reg)] != value_type_of(out.dtype))
      return "output " + std::to_string(o) + " stores a " +
             value_type_name(types[static_cast<std::size_t>(out.reg)]) + " register as " +
             std::string(dtype_name(out.dtype));
  }
  return {};
}

std::string key_problem(const SpecializationKey& key) {
  if (key.rank < 0 || key.rank > kMaxRank) return "rank " + std::to_string(key.rank);
  if (key.inputs.size() + key.outputs.size() >
      static_cast<std::size_t>(backends::cpu::kMaxOperands))
    return std::to_string(key.inputs.size() + key.outputs.size()) + " operands";
  // Unused classes stay as launch_key leaves them: keys are compared whole.
  const auto unused_classes_set = [&](const OperandKey& o) {
    for (std::size_t d = static_cast<std::size_t>(key.rank); d < o.strides.size(); ++d)
      if (o.strides[d] != StrideClass::kContiguous) return true;
    return false;
  };
  for (const OperandKey& o : key.inputs) {
    if (unused_classes_set(o)) return "a stride class past the rank";
    if (o.alias != -1) return "an input aliases";
  }
  for (const OperandKey& o : key.outputs) {
    if (unused_classes_set(o)) return "a stride class past the rank";
    if (o.alias < -1 || o.alias >= static_cast<int>(key.inputs.size()))
      return "an output aliases input " + std::to_string(o.alias);
  }
  const auto& classes = key.scalar_classes;
  if (!classes.empty()) {
    if (classes.size() < 2 || classes.size() > 256)
      return std::to_string(classes.size()) + " scalar classes";
    bool any = false;
    for (std::size_t i = 0; i < classes.size(); ++i) {
      // Class i is named by its first argument, which names itself.
      if (classes[i] > i || classes[classes[i]] != classes[i])
        return "scalar class " + std::to_string(i);
      any = any || classes[i] != i;
    }
    if (!any) return "scalar classes where no two arguments are equal";
  }
  return {};
}

std::string key_fit_problem(const FusedProgram& p, const SpecializationKey& key) {
  if (key.inputs.size() != p.inputs.size() || key.outputs.size() != p.outputs.size())
    return "the key has " + std::to_string(key.inputs.size()) + " inputs and " +
           std::to_string(key.outputs.size()) + " outputs, the program " +
           std::to_string(p.inputs.size()) + " and " + std::to_string(p.outputs.size());
  for (std::size_t i = 0; i < p.inputs.size(); ++i)
    if (key.inputs[i].dtype != p.inputs[i]) return "input " + std::to_string(i) + " dtype";
  std::vector<char> aliased(p.inputs.size(), 0);
  for (std::size_t o = 0; o < p.outputs.size(); ++o) {
    const OperandKey& out = key.outputs[o];
    if (out.dtype != p.outputs[o].dtype) return "output " + std::to_string(o) + " dtype";
    if (out.alias < 0) continue;
    // launch_key sees an alias where an output was given an input's buffer, which the
    // element-wise optimization does for an input of the output's dtype and layout only.
    const auto a = static_cast<std::size_t>(out.alias);
    if (aliased[a]++ || key.inputs[a].dtype != out.dtype || key.inputs[a].strides != out.strides)
      return "output " + std::to_string(o) + " aliases input " + std::to_string(a);
  }
  if (!key.scalar_classes.empty()) {
    if (key.scalar_classes.size() != p.scalars.size()) return "scalar classes";
    for (std::size_t i = 0; i < p.scalars.size(); ++i)
      if (p.scalars[key.scalar_classes[i]].type != p.scalars[i].type)
        return "scalar class of another type";
  }
  if (key.exact_reciprocals & ~ProgramFacts::of(p).divisor_scalars)
    return "exact reciprocals of scalars that divide nothing";
  return {};
}

}  // namespace streamfuse::jit
