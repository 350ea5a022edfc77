#include "jit/op_instructions.h"

#include <string>

#include "streamfuse/error.h"

namespace streamfuse::jit {

std::int32_t emit_elementwise_op(const core::OpDesc& op, OpEmitter& e) {
  using core::OpCategory;
  const ValueType c = value_type_of(op.attrs.dtype);
  const DType out = op.outputs[0].dtype;
  Instruction in;
  in.kind = InstrKind::kOp;
  in.op = op.kind;
  in.type = c;
  ValueType result = c;
  std::int32_t r = -1;
  switch (core::op_category(op.kind)) {
    case core::OpCategory::kUnary:
      in.args[0] = e.operand(0, c);
      break;
    case core::OpCategory::kBinary:
    case core::OpCategory::kCompare:
      if (op.attrs.scalar_side == core::ScalarSide::kNone) {
        in.args[0] = e.operand(0, c);
        in.args[1] = e.operand(1, c);
      } else {
        const std::int32_t t = e.operand(0, c);
        const std::int32_t s = e.scalar({ScalarArg::Mode::kOperand, c, kF32});
        const bool lhs = op.attrs.scalar_side == core::ScalarSide::kLhs;
        in.args[0] = lhs ? s : t;
        in.args[1] = lhs ? t : s;
      }
      if (core::op_category(op.kind) == core::OpCategory::kCompare) result = ValueType::kBool;
      break;
    case core::OpCategory::kLogical:
      in.type = result = ValueType::kBool;
      for (std::size_t k = 0; k < op.inputs.size(); ++k)
        in.args[k] = e.operand(k, ValueType::kBool);
      break;
    case core::OpCategory::kSelect:
      in.args[0] = e.operand(0, ValueType::kBool);
      in.args[1] = e.operand(1, c);
      in.args[2] = e.operand(2, c);
      break;
    case core::OpCategory::kCast:
      r = e.operand(0, value_type_of(out));
      break;
    default:
      throw Error("internal error: " + std::string(core::op_name(op.kind)) +
                  " is not an element-wise op; please report this");
  }
  if (r < 0) r = e.emit(in, result);
  if (rounds_in_registers(out)) {
    Instruction round;
    round.kind = InstrKind::kRound;
    round.type = value_type_of(out);
    round.round = out;
    round.args[0] = r;
    r = e.emit(round, round.type);
  }
  return r;
}

}  // namespace streamfuse::jit
