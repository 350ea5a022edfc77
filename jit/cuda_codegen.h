// CUDA C++ code generation: a FusedProgram specialized by a SpecializationKey becomes one
// extern "C" __global__ function with the calling convention of jit/cuda_kernel_abi.h, for NVRTC.
// Like the CPU generator (jit/cpp_codegen.h) it calls the sf_* functions of the kernel prelude,
// whose CUDA branch uses only IEEE-exact operations: compiled with --fmad=false, a CUDA kernel
// computes what the CPU kernels compute (bitwise for exact ops, and for the polynomial math
// wherever the CPU's ISA level uses FMA the same way).
//
// The kernel is a grid-stride loop in 32-bit indices when the launch allows (`narrow`), else in
// 64-bit. When every operand is contiguous or a broadcast scalar it moves VEC elements per
// thread with one vector load or store per operand (16 bytes for the widest dtype), at run time
// only if every contiguous operand is aligned to its vector, with a scalar tail.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "jit/program.h"
#include "jit/specialization.h"

namespace streamfuse::jit {

// The definition of `function_name` (and its argument struct). Throws CompileError when the
// program uses an op on a type it has no form for, or does not fit the key.
std::string cuda_kernel_source(const FusedProgram& program, const SpecializationKey& key,
                               std::string_view function_name);

// The same for a program with a reduction anchor (jit/cuda_reduce_codegen.cpp): a block per
// row; its argument struct adds the row length and each stage's lanes flag to CudaArgsLayout's
// words (numel counting rows).
std::string cuda_reduce_kernel_source(const FusedProgram& program, const SpecializationKey& key,
                                      std::string_view function_name);

// The text every CUDA translation unit of kernels starts with: the same prelude as the CPU's
// (core/scalar_ops.h, vector_math.h, op_math.h and reduce_math.h in their CUDA form) and the
// vector type.
const std::string& cuda_kernel_prelude();

// The NVRTC options the kernels need: --fmad=false (the prelude's math relies on a*b+c being
// rounded twice, as the CPU JIT's -ffp-contract=off does), the C++ dialect, and no warning for
// loads a program does not use.
std::span<const char* const> cuda_kernel_options();

}  // namespace streamfuse::jit
