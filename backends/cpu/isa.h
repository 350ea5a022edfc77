// Picks the kernels compiled for the best ISA level the running CPU supports.
#pragma once

#include "backends/cpu/kernels/kernels.h"

namespace streamfuse::backends::cpu {

// The kernel table for this CPU (chosen once). STREAMFUSE_CPU_ISA=v2|v3|v4 caps the level (for
// tests and comparisons); a level the CPU lacks is refused with a warning.
const KernelTable& kernels();

}  // namespace streamfuse::backends::cpu
