// What the code of a program with a reduction anchor needs (jit/program.h): the analyses the
// checker, the interpreter and both code generators share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "jit/program.h"

namespace streamfuse::jit {

// Per register: how many of the anchor's stages must have run before it can be computed (a
// kReduced instruction of stage k needs k + 1; an instruction, the most its operands need).
std::vector<std::size_t> stages_needed(const FusedProgram& program);

// The prologue instructions (their indices, in program order) that computing `roots` takes;
// registers marked in `leaves` (per register; empty: none) are taken but not what they are
// computed from.
std::vector<std::size_t> prologue_closure(const FusedProgram& program,
                                          std::span<const std::int32_t> roots,
                                          const std::vector<char>& leaves = {});

}  // namespace streamfuse::jit
