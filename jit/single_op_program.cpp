#include "jit/single_op_program.h"

#include "jit/op_instructions.h"

namespace streamfuse::jit {
namespace {

// A program of one op: each operand loaded once (converted where the op reads another type),
// the scalar operand as argument 0.
class SingleOpEmitter final : public OpEmitter {
 public:
  SingleOpEmitter(FusedProgram& p, const core::OpDesc& op) : p_(p), op_(op) {}

  // Input `i` of the op as `type`: loads are numbered in the order operands are asked for,
  // which is input order for every op.
  std::int32_t operand(std::size_t i, ValueType type) override {
    const DType d = op_.inputs[i].dtype;
    Instruction in;
    in.kind = InstrKind::kLoad;
    in.type = value_type_of(d);
    in.index = static_cast<std::int32_t>(p_.inputs.size());
    p_.inputs.push_back(d);
    const std::int32_t r = emit(in, in.type);
    if (type == in.type) return r;
    Instruction conv;
    conv.kind = InstrKind::kConvert;
    conv.type = type;
    conv.args[0] = r;
    return emit(conv, type);
  }
  std::int32_t scalar(const ScalarArg& arg) override {
    Instruction in;
    in.kind = InstrKind::kScalar;
    in.type = arg.type;
    in.index = static_cast<std::int32_t>(p_.scalars.size());
    p_.scalars.push_back(arg);
    return emit(in, arg.type);
  }
  std::int32_t emit(Instruction in, ValueType) override {
    in.out = p_.num_registers++;
    p_.prologue.push_back(in);
    return in.out;
  }

 private:
  FusedProgram& p_;
  const core::OpDesc& op_;
};

}  // namespace

FusedProgram single_op_program(const core::OpDesc& op) {
  FusedProgram p;
  SingleOpEmitter e(p, op);
  const DType out = op.outputs.at(0).dtype;
  if (op.kind == core::OpKind::kFull) {  // the value, as full() stores it
    p.outputs.push_back({e.scalar({ScalarArg::Mode::kFill, value_type_of(out), out}), out});
    return p;
  }
  p.outputs.push_back({emit_elementwise_op(op, e), out});
  return p;
}

FusedProgram copy_program(DType from, DType to) {
  core::OpDesc cast;
  cast.kind = core::OpKind::kCast;
  cast.attrs.dtype = from;
  cast.inputs.push_back({0, Shape{}, from});
  cast.outputs.push_back({0, Shape{}, to});
  return single_op_program(cast);
}

}  // namespace streamfuse::jit
