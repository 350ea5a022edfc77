// Which of a reduce kernel's inputs guards another: the kernel's results depend on an element of
// input `guarded` only where the bool input it returns is true at that element. Attention's
// `where(mask, p * scale, -inf)` makes the mask guard p, so the product chain does not compute
// p where a causal mask is false (half of the scores at every length).
#pragma once

#include "jit/program.h"

namespace streamfuse::fusion {

// The input that guards `guarded` in `program` (a reduction anchor's), or -1 where none does:
// every use of `guarded`'s value, through element-wise instructions, ends in the true branch of
// a where whose condition is that input's element (the same input for all of them) and whose
// false branch does not depend on `guarded`; no stage, output or indexed read takes it otherwise.
int guarding_input(const jit::FusedProgram& program, int guarded);

}  // namespace streamfuse::fusion
