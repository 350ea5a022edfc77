#include "fusion/builders/product_chain/guard.h"

#include <vector>

namespace streamfuse::fusion {

int guarding_input(const jit::FusedProgram& program, int guarded) {
  if (program.anchor.kind != jit::AnchorKind::kReduce || guarded < 0) return -1;
  const auto registers = static_cast<std::size_t>(program.num_registers);
  std::vector<char> depends(registers, 0);  // on `guarded`'s element, unguarded
  std::vector<int> loaded(registers, -1);   // the input a kLoad register holds
  // Whether register `reg` (an instruction's argument, -1 for none) still depends on it.
  const auto reads = [&](std::int32_t reg) {
    return reg >= 0 && static_cast<std::size_t>(reg) < registers &&
           depends[static_cast<std::size_t>(reg)];
  };
  int guard = -1;
  for (const jit::Instruction& in : program.prologue) {
    const auto out = static_cast<std::size_t>(in.out);
    if (out >= registers) return -1;
    if (in.kind == jit::InstrKind::kLoad) {
      loaded[out] = in.index;
      depends[out] = in.index == guarded;
      continue;
    }
    const bool tainted = reads(in.args[0]) || reads(in.args[1]) || reads(in.args[2]);
    if (!tainted) continue;
    if (in.kind == jit::InstrKind::kLoadAt) return -1;
    if (in.kind == jit::InstrKind::kOp && in.op == core::OpKind::kWhere && !reads(in.args[0]) &&
        reads(in.args[1]) && !reads(in.args[2]) && in.args[0] >= 0) {
      const int condition = loaded[static_cast<std::size_t>(in.args[0])];
      if (condition >= 0 && condition != guarded &&
          program.inputs[static_cast<std::size_t>(condition)] == kBool &&
          (guard < 0 || guard == condition)) {
        guard = condition;
        continue;  // where the condition is false, the result is the other branch
      }
    }
    depends[out] = 1;
  }
  // Nothing that leaves the prologue may still depend on it unguarded.
  for (const jit::ReduceStage& st : program.anchor.stages)
    if (reads(st.input)) return -1;
  for (const jit::ProgramOutput& o : program.outputs)
    if (reads(o.reg)) return -1;
  for (const jit::Instruction& in : program.epilogue)
    for (std::int32_t a : in.args)
      if (reads(a)) return -1;
  return guard;
}

}  // namespace streamfuse::fusion
