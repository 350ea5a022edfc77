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
void dot_rows(const DotRowsArgs& a);
void combine_rows(const RowProductArgs& a);
void batched_gemm(const RowProductArgs& a);
void batched_gemm_chain(const RowChainArgs& a);
void gemm_one_b(const RowProductArgs& a);
ChunkFn chunk_op(core::OpKind kind, DType compute);
void chunk_gather(const Iteration& it, const Operand& operand, int k, DType as, std::int64_t lo,
                  std::int64_t n, void* buf);
void chunk_scatter(const Iteration& it, const Operand& operand, int k, DType from, std::int64_t lo,
                   std::int64_t n, const void* buf);
void chunk_convert(DType from, DType to, const void* in, void* out, std::int64_t n);
void chunk_round(DType to, void* values, std::int64_t n);
const FoldFns* chunk_fold(core::OpKind kind, DType compute);

const KernelTable& kernel_table() {
  static const KernelTable table{
      "x86-64-" SF_ISA_STRINGIFY(STREAMFUSE_ISA),
      elementwise,
      copy,
      fill,
      random,
      reduce,
      dot_rows,
      combine_rows,
      batched_gemm,
      batched_gemm_chain,
      gemm_one_b,
      {chunk_op, chunk_gather, chunk_scatter, chunk_convert, chunk_round, chunk_fold}};
  return table;
}

}  // namespace streamfuse::backends::cpu::SF_ISA_NS
