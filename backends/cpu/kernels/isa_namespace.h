// The namespace of the ISA level this kernel translation unit is compiled for: isa_v2, isa_v3,
// isa_v4 or isa_generic (STREAMFUSE_ISA is set by cmake/CpuIsa.cmake).
#pragma once

#ifndef STREAMFUSE_ISA
#error "kernel sources are compiled through streamfuse_isa_variant() (cmake/CpuIsa.cmake)"
#endif

#define SF_ISA_CONCAT_(a, b) a##b
#define SF_ISA_CONCAT(a, b) SF_ISA_CONCAT_(a, b)
#define SF_ISA_NS SF_ISA_CONCAT(isa_, STREAMFUSE_ISA)
