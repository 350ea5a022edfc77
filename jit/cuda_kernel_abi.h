// The calling convention of generated CUDA kernels. A kernel takes one parameter by value: a
// struct of 8-byte words, laid out by CudaArgsLayout (the generated source declares the same
// struct, jit/cuda_codegen.cpp):
//
//   data[operands]             device pointers to element 0 of each operand, inputs then outputs
//   sizes[rank]                the merged iteration sizes, outermost first
//   strides[operands * rank]   operand k's element stride along d at [k * rank + d] (read only
//                              for kArgument dimensions)
//   scalars[scalars]           jit::scalar_bits of each scalar argument
//   numel                      the number of elements of the iteration
//   narrow                     1 when numel and every element offset of every operand fit in a
//                              signed 32-bit int (the kernel then indexes in 32 bits: 64-bit
//                              division and multiplication cost several times more on a GPU)
//
// Kernels are grid-stride loops: any grid covers the launch; blocks have kCudaBlockSize threads.
#pragma once

#include <cstddef>

namespace streamfuse::jit {

inline constexpr int kCudaBlockSize = 256;

struct CudaArgsLayout {
  std::size_t operands = 0, rank = 0, scalars = 0;

  std::size_t data() const { return 0; }
  std::size_t sizes() const { return operands; }
  std::size_t strides() const { return sizes() + rank; }
  std::size_t scalar_args() const { return strides() + operands * rank; }
  std::size_t numel() const { return scalar_args() + scalars; }
  std::size_t narrow() const { return numel() + 1; }
  std::size_t words() const { return narrow() + 1; }
  std::size_t bytes() const { return words() * 8; }
};

}  // namespace streamfuse::jit
