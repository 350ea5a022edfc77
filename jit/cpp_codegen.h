// C++ code generation for the CPU: a FusedProgram specialized by a SpecializationKey becomes one
// extern "C" function with the kernel ABI of jit/kernel_abi.h. The generated text includes
// nothing; it calls the sf_* functions of cpu_kernel_prelude(), the same ones the eager kernels
// call, so compiled results are bitwise identical to unfused execution on the same ISA level.
#pragma once

#include <string>
#include <string_view>

#include "jit/program.h"
#include "jit/specialization.h"

namespace streamfuse::jit {

// The definition of `function_name`: walks [begin, end) as runs along the innermost merged
// dimension, with one vectorizable inner loop per run. Throws CompileError when the program uses
// an op on a type it has no form for, or does not fit the key (operand counts, rank).
std::string cpu_kernel_source(const FusedProgram& program, const SpecializationKey& key,
                              std::string_view function_name);

// The same for a program with a reduction anchor (jit/cpp_reduce_codegen.cpp): the function has
// the CpuReduceKernelFn ABI.
std::string cpu_reduce_kernel_source(const FusedProgram& program, const SpecializationKey& key,
                                     std::string_view function_name);

// The text every translation unit of kernels starts with: core/scalar_ops.h,
// core/vector_math.h, core/op_math.h and core/reduce_math.h, embedded into the library at build
// time.
const std::string& cpu_kernel_prelude();

}  // namespace streamfuse::jit
