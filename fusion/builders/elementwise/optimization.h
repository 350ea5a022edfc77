// ElementwiseOptimization: runs a segment's element-wise ops as fused kernels, one per block of
// ops that iterate over the same shape (fusion/trace.h). Built by ElementwiseBuilder in relative
// terms; every run takes ids, sizes and scalar values from the segment it runs on. An index op
// in a block is a read at indices (IndexedRead): its indices are checked on the host before the
// kernel runs, and an out-of-range one fails exactly the results that depend on it, with the
// index op's own error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/ir.h"
#include "fusion/optimization.h"
#include "fusion/trace.h"
#include "jit/program.h"

namespace streamfuse::fusion {

// Each traced block runs as one kernel.
using ElementwiseKernel = TracedBlock;

class ElementwiseOptimization final : public Optimization {
 public:
  using Tensor = TracedTensor;

  ElementwiseOptimization(std::size_t len, std::vector<Tensor> tensors,
                          std::vector<ElementwiseKernel> kernels);

  std::size_t len() const override { return len_; }
  void execute(ExecutionContext& context) override;
  std::string describe() const override;
  std::string_view codec() const override { return "elementwise"; }
  void read_ahead(jit::KernelCache& kernels) const override;

  const std::vector<ElementwiseKernel>& kernels() const { return kernels_; }
  const std::vector<Tensor>& tensors() const { return tensors_; }

 private:
  std::size_t len_;
  std::vector<Tensor> tensors_;
  std::vector<ElementwiseKernel> kernels_;
  std::vector<std::uint32_t> erase_first_;  // tensors to erase that no kernel reads
  // Per kernel, per indexed read: bit o set when program output o depends on its value (those
  // fail when its indices are out of range; the others are computed as usual).
  std::vector<std::vector<std::uint64_t>> indexed_outputs_;
  // Per kernel: whether each scalar argument is an indexed read's stride (taken from the
  // source's handle, not from an op's scalars).
  std::vector<std::vector<char>> stride_scalars_;
};

}  // namespace streamfuse::fusion
