#include "jit/single_op_program.h"

#include <string>

#include "streamfuse/error.h"

namespace streamfuse::jit {
namespace {

using stream::OpCategory;

bool rounds(DType d) { return d == kF16 || d == kBF16; }

// Appends instructions to a program of one op, in the element-wise builder's order.
class Emitter {
 public:
  explicit Emitter(FusedProgram& p) : p_(p) {}

  std::int32_t emit(Instruction in) {
    in.out = p_.num_registers++;
    p_.body.push_back(in);
    return in.out;
  }
  std::int32_t load(DType d) {
    Instruction in;
    in.kind = InstrKind::kLoad;
    in.type = value_type_of(d);
    in.index = static_cast<std::int32_t>(p_.inputs.size());
    p_.inputs.push_back(d);
    return emit(in);
  }
  std::int32_t scalar(ScalarArg arg) {
    Instruction in;
    in.kind = InstrKind::kScalar;
    in.type = arg.type;
    in.index = static_cast<std::int32_t>(p_.scalars.size());
    p_.scalars.push_back(arg);
    return emit(in);
  }
  // Register `r` of type `from` as type `to`.
  std::int32_t convert(std::int32_t r, ValueType from, ValueType to) {
    if (from == to) return r;
    Instruction in;
    in.kind = InstrKind::kConvert;
    in.type = to;
    in.args[0] = r;
    return emit(in);
  }
  // A loaded input of dtype `d` as type `to`.
  std::int32_t operand(DType d, ValueType to) { return convert(load(d), value_type_of(d), to); }
  void store(std::int32_t r, DType d) {
    if (rounds(d)) {
      Instruction in;
      in.kind = InstrKind::kRound;
      in.type = ValueType::kFloat;
      in.round = d;
      in.args[0] = r;
      r = emit(in);
    }
    p_.outputs.push_back({r, d});
  }

 private:
  FusedProgram& p_;
};

}  // namespace

FusedProgram single_op_program(const stream::OpDesc& op) {
  FusedProgram p;
  Emitter e(p);
  const DType out = op.outputs.at(0).dtype;
  const ValueType c = value_type_of(op.attrs.dtype);
  Instruction in;
  in.kind = InstrKind::kOp;
  in.op = op.kind;
  in.type = c;
  switch (stream::op_category(op.kind)) {
    case OpCategory::kCreation:
      if (op.kind != stream::OpKind::kFull) break;
      e.store(e.scalar({ScalarArg::Mode::kFill, value_type_of(out), out}), out);
      return p;
    case OpCategory::kUnary:
      in.args[0] = e.operand(op.inputs[0].dtype, c);
      e.store(e.emit(in), out);
      return p;
    case OpCategory::kBinary:
    case OpCategory::kCompare:
      if (op.attrs.scalar_side == stream::ScalarSide::kNone) {
        in.args[0] = e.operand(op.inputs[0].dtype, c);
        in.args[1] = e.operand(op.inputs[1].dtype, c);
      } else {
        const std::int32_t t = e.operand(op.inputs[0].dtype, c);
        const std::int32_t s = e.scalar({ScalarArg::Mode::kOperand, c, kF32});
        const bool lhs = op.attrs.scalar_side == stream::ScalarSide::kLhs;
        in.args[0] = lhs ? s : t;
        in.args[1] = lhs ? t : s;
      }
      e.store(e.emit(in), out);
      return p;
    case OpCategory::kLogical:
      in.type = ValueType::kBool;
      for (std::size_t k = 0; k < op.inputs.size(); ++k)
        in.args[k] = e.operand(op.inputs[k].dtype, ValueType::kBool);
      e.store(e.emit(in), out);
      return p;
    case OpCategory::kSelect:
      in.args[0] = e.operand(op.inputs[0].dtype, ValueType::kBool);
      in.args[1] = e.operand(op.inputs[1].dtype, c);
      in.args[2] = e.operand(op.inputs[2].dtype, c);
      e.store(e.emit(in), out);
      return p;
    case OpCategory::kCast:
      e.store(e.operand(op.inputs[0].dtype, value_type_of(out)), out);
      return p;
    default:
      break;
  }
  throw Error("internal error: " + std::string(stream::op_name(op.kind)) +
              " is not an element-wise op; please report this");
}

FusedProgram copy_program(DType from, DType to) {
  FusedProgram p;
  Emitter e(p);
  e.store(e.operand(from, value_type_of(to)), to);
  return p;
}

}  // namespace streamfuse::jit
