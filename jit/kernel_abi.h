// The calling convention of compiled CPU kernels. The generated source declares the same
// signature in plain C types (jit/cpp_codegen.cpp).
#pragma once

namespace streamfuse::jit {

// Computes flat indices [begin, end) of the launch's iteration:
// - data[k]: element 0 of operand k (inputs, then outputs);
// - sizes[d]: the merged iteration sizes, outermost first (rank of the specialization key);
// - strides[k * rank + d]: operand k's element stride along d (read only for kArgument dims);
// - scalars[i]: scalar argument i (jit::scalar_bits: float bits in the low half, or integers).
// Threads call it on disjoint ranges.
extern "C" {
typedef void (*CpuKernelFn)(char* const* data, const long long* sizes, const long long* strides,
                            const long long* scalars, long long begin, long long end);
}

}  // namespace streamfuse::jit
