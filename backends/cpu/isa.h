// Picks the kernels compiled for the best ISA level the running CPU supports.
#pragma once

#include <optional>

#include "backends/cpu/kernels/kernels.h"

namespace streamfuse::backends::cpu {

// STREAMFUSE_CPU_ISA=v2|v3|v4 as a level (2, 3 or 4), nullopt when unset or empty. Throws Error
// naming the variable for any other value (Config::from_env reads it too, so that a bad value
// surfaces at the library's first use).
std::optional<int> isa_cap_from_env();
// The x86-64 level CPU code runs at (2, 3 or 4; 0 off x86-64): the best this CPU supports,
// capped by STREAMFUSE_CPU_ISA (for tests and comparisons; a cap above the CPU's level leaves
// the CPU's level). Chosen once; throws Error (every time) while the variable is bad.
int isa_level();
// The kernel table of isa_level().
const KernelTable& kernels();
// The table of `level` if this CPU can run it, else nullptr (tests compare levels with it).
const KernelTable* kernel_table_for(int level);

}  // namespace streamfuse::backends::cpu
