// ReduceOptimization: runs a segment's element-wise ops and reductions over one axis as one
// kernel with a reduction anchor (jit/program.h), built by ReduceBuilder in relative terms;
// every run takes ids, sizes and scalar values from the segment it runs on.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "fusion/optimization.h"
#include "fusion/trace.h"

namespace streamfuse::fusion {

class ReduceOptimization final : public Optimization {
 public:
  using Tensor = TracedTensor;

  // `kernel`: its program has a reduction anchor; its shape source is a tensor of the shape the
  // rows are cut from; per-row outputs have the reduced shape; nothing is lent.
  ReduceOptimization(std::size_t len, std::vector<Tensor> tensors, TracedBlock kernel);

  std::size_t len() const override { return len_; }
  void execute(ExecutionContext& context) override;
  std::string describe() const override;
  std::string_view codec() const override { return "reduce"; }
  void read_ahead(jit::KernelCache& kernels) const override;

  const std::vector<Tensor>& tensors() const { return tensors_; }
  const TracedBlock& kernel() const { return kernel_; }

 private:
  std::size_t len_;
  std::vector<Tensor> tensors_;
  TracedBlock kernel_;
};

}  // namespace streamfuse::fusion
