// What every FusedProgram and SpecializationKey the library makes satisfies, and what the
// interpreter, the code generators and the launchers rely on without checking: registers written
// once before they are read, indices in range, operand types that fit each instruction, keys
// that launch_key() could have made for their program. Programs and keys read from files
// (jit/program_codec.cpp, jit/kernel_codec.cpp) are checked with these, so one that passes is as
// safe to run, interpret and compile as one built in this process.
#pragma once

#include <cstddef>
#include <string>

#include "jit/program.h"
#include "jit/specialization.h"

namespace streamfuse::jit {

// Bounds far above what a plan's segment (fusion::kMaxSegmentOps ops, each a few instructions
// and at most one scalar) makes, and low enough that the interpreter's scratch memory (8 KiB per
// live register) and a generated kernel stay small.
inline constexpr std::size_t kMaxInstructions = 4096;
inline constexpr std::size_t kMaxScalarArgs = 256;

// Why `program` is not well formed, or empty when it is. Well formed: at most
// backends::cpu::kMaxOperands inputs and outputs together; every instruction writes a register
// of its own and reads only registers written before it, with the types it computes in (a kOp is
// an element-wise op that has a form for its type, see has_form); loads and scalars name an
// input or a scalar argument of their type; kRound rounds a float to f16 or bf16, or wraps an i32
// to i8 or u8; each output reads a register of its dtype's value type.
std::string program_problem(const FusedProgram& program);

// Why `key` is not a key launch_key() could make, or empty: rank 0..kMaxRank with the stride
// classes past it left contiguous, at most kMaxOperands operands, aliases that name an input,
// scalar classes that each name the first argument of their class (and are empty when no two
// arguments are equal).
std::string key_problem(const SpecializationKey& key);

// Why `key` (which passes key_problem) is not a key launch_key() could make for `program`
// (which passes program_problem), or empty: one operand key per input and output of the
// program's dtype, an output aliasing an input of its dtype and layout (at most one output per
// input), one scalar class per argument, joining arguments of one type only, and exact
// reciprocals only for scalars that divide.
std::string key_fit_problem(const FusedProgram& program, const SpecializationKey& key);

}  // namespace streamfuse::jit
