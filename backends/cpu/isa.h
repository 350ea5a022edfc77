// Picks the kernels compiled for the best ISA level the running CPU supports.
#pragma once

#include "backends/cpu/kernels/kernels.h"

namespace streamfuse::backends::cpu {

// The x86-64 level CPU code runs at (2, 3 or 4; 0 off x86-64): the best this CPU supports,
// capped by STREAMFUSE_CPU_ISA=v2|v3|v4 (for tests and comparisons; a level the CPU lacks is
// refused with a warning). Chosen once.
int isa_level();
// The kernel table of isa_level().
const KernelTable& kernels();
// The table of `level` if this CPU can run it, else nullptr (tests compare levels with it).
const KernelTable* kernel_table_for(int level);

}  // namespace streamfuse::backends::cpu
