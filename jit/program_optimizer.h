// Simplification of a FusedProgram before it runs or compiles. Every rewrite keeps each result's
// bits (NaN payloads aside), so fused results still equal unfused ones.
#pragma once

#include <cstdint>
#include <span>

#include "jit/program.h"

namespace streamfuse::jit {

// - folds exact identities: neg(neg a) = a, abs(neg a) = abs a, mul(neg a, neg b) = mul(a, b)
//   (a GELU with a sign-split erf computes its second branch from the first this way);
// - merges identical instructions (commutative operands ordered first);
// - drops instructions no output needs;
// - numbers registers densely in order of definition.
// Inputs and scalar arguments keep their indices (the caller's operand lists stay valid).
void simplify(FusedProgram& program);

// Makes every use of scalar argument i read argument classes[i] (arguments known equal), then
// simplifies, so what equal constants compute is computed once.
void merge_equal_scalars(FusedProgram& program, std::span<const std::uint8_t> classes);

// Turns every float division by a scalar argument whose bit is set in `exact_reciprocals` into a
// multiplication by the argument's reciprocal (exact for those arguments, see
// SpecializationKey::exact_reciprocals), then simplifies.
void multiply_by_exact_reciprocals(FusedProgram& program, std::uint64_t exact_reciprocals);

}  // namespace streamfuse::jit
