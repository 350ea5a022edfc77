#include "jit/reduce_program.h"

#include <algorithm>

namespace streamfuse::jit {

std::vector<std::size_t> stages_needed(const FusedProgram& program) {
  std::vector<std::size_t> needs(static_cast<std::size_t>(program.num_registers), 0);
  for (const std::vector<Instruction>* block : program.blocks())
    for (const Instruction& in : *block) {
      std::size_t need =
          in.kind == InstrKind::kReduced ? static_cast<std::size_t>(in.index) + 1 : 0;
      for (std::int32_t a : in.args)
        if (a >= 0 && static_cast<std::size_t>(a) < needs.size())
          need = std::max(need, needs[static_cast<std::size_t>(a)]);
      if (in.out >= 0 && static_cast<std::size_t>(in.out) < needs.size())
        needs[static_cast<std::size_t>(in.out)] = need;
    }
  return needs;
}

std::vector<std::size_t> prologue_closure(const FusedProgram& program,
                                          std::span<const std::int32_t> roots,
                                          const std::vector<char>& leaves) {
  std::vector<char> need(static_cast<std::size_t>(program.num_registers), 0);
  for (std::int32_t r : roots) need[static_cast<std::size_t>(r)] = 1;
  std::vector<std::size_t> code;
  for (std::size_t i = program.prologue.size(); i-- > 0;) {
    const Instruction& in = program.prologue[i];
    const auto out = static_cast<std::size_t>(in.out);
    if (!need[out]) continue;
    code.push_back(i);
    if (!leaves.empty() && leaves[out]) continue;
    for (std::int32_t a : in.args)
      if (a >= 0) need[static_cast<std::size_t>(a)] = 1;
  }
  std::reverse(code.begin(), code.end());
  return code;
}

}  // namespace streamfuse::jit
