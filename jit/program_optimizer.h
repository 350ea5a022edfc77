// Simplification of a FusedProgram before it runs or compiles. Every rewrite keeps each result's
// bits (NaN payloads aside), so fused results still equal unfused ones.
#pragma once

#include "jit/program.h"

namespace streamfuse::jit {

// - folds exact identities: neg(neg a) = a, abs(neg a) = abs a, mul(neg a, neg b) = mul(a, b)
//   (a GELU with a sign-split erf computes its second branch from the first this way);
// - merges identical instructions (commutative operands ordered first);
// - drops instructions no output needs;
// - numbers registers densely in order of definition.
// Inputs and scalar arguments keep their indices (the caller's operand lists stay valid).
void simplify(FusedProgram& program);

}  // namespace streamfuse::jit
