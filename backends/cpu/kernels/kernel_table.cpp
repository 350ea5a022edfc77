// This ISA level's kernel table.
#include "backends/cpu/kernels/isa_namespace.h"
#include "backends/cpu/kernels/kernels.h"

#define SF_ISA_STRINGIFY_(x) #x
#define SF_ISA_STRINGIFY(x) SF_ISA_STRINGIFY_(x)

namespace streamfuse::backends::cpu::SF_ISA_NS {

void elementwise(const ElementwiseArgs& a);
void copy(const CopyArgs& a);
void fill(const FillArgs& a);
void random(const RandomArgs& a);
void reduce(const ReduceArgs& a);

const KernelTable& kernel_table() {
  static const KernelTable table{
      "x86-64-" SF_ISA_STRINGIFY(STREAMFUSE_ISA), elementwise, copy, fill, random, reduce};
  return table;
}

}  // namespace streamfuse::backends::cpu::SF_ISA_NS
