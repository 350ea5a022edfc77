// ElementwiseOptimization: runs a segment's element-wise ops as fused kernels, one per group of
// ops that iterate over the same shape. Built by ElementwiseBuilder in relative terms; every run
// takes ids, sizes and scalar values from the segment it runs on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fusion/optimization.h"
#include "jit/program.h"
#include "core/ir.h"

namespace streamfuse::fusion {

// Where a relative tensor first appears in the segment: op `op`, input `slot` (or its output
// when slot is -1). The tensor's global id, shape and dtype are read there at run time.
struct TensorSource {
  std::uint32_t op = 0;
  std::int32_t slot = -1;
};

// Where a scalar argument's value is: scalars[slot] of op `op`.
struct ScalarSource {
  std::uint32_t op = 0;
  std::uint32_t slot = 0;
};

struct ElementwiseKernel {
  jit::FusedProgram program;
  jit::ProgramFacts facts;             // of `program`
  TensorSource shape_source;           // a tensor of the iteration shape (the group's first op)
  std::vector<std::uint32_t> inputs;   // tensor index (into ElementwiseOptimization::tensors) per
                                       // program input
  std::vector<std::uint32_t> outputs;  // tensor index per program output
  std::vector<ScalarSource> scalars;   // per program scalar argument
  // Per output: the program input whose buffer it may take (a tensor that dies in this segment,
  // read last by this kernel, of the output's dtype and shape), or -1.
  std::vector<std::int32_t> lend;
};

class ElementwiseOptimization final : public Optimization {
 public:
  struct Tensor {
    TensorSource source;
    bool publish = false;  // an output the rest of the program still holds: stored as its value
    bool erase = false;    // an existing tensor whose last use is in this segment
  };

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
};

}  // namespace streamfuse::fusion
