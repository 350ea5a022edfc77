// MatmulOptimization: runs a segment's matrix product and the steps after it that the backend
// applies as it stores the product (Backend::execute_product), built by MatmulBuilder in
// relative terms; every run takes ids, sizes, scalars and handles from the segment it runs on.
// Where the backend stores the product alone (a layout or broadcast its library has no kernel
// for), the steps run after it as one element-wise kernel: what the element-wise builder would
// have made of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fusion/optimization.h"

namespace streamfuse::fusion {

// One step: op `op` of the segment, whose input `value_slot` is the running value.
struct MatmulStep {
  std::uint32_t op = 0;
  std::int32_t value_slot = 0;

  friend bool operator==(const MatmulStep&, const MatmulStep&) = default;
};

class MatmulOptimization final : public Optimization {
 public:
  // The segment's op 0 is the product; `steps` name later ops in order; the other ops of the
  // first `len` are drops of the chain's values. `epilogue` runs ops 1 to len - 1 (as its ops 0
  // to len - 2) after the product alone.
  MatmulOptimization(std::size_t len, std::vector<MatmulStep> steps,
                     std::unique_ptr<Optimization> epilogue);

  std::size_t len() const override { return len_; }
  void execute(ExecutionContext& context) override;
  std::string describe() const override;
  std::string_view codec() const override { return "matmul"; }
  void read_ahead(jit::KernelCache& kernels) const override { epilogue_->read_ahead(kernels); }

  const std::vector<MatmulStep>& steps() const { return steps_; }

 private:
  void run_one_by_one(ExecutionContext& context) const;

  std::size_t len_;
  std::vector<MatmulStep> steps_;
  std::unique_ptr<Optimization> epilogue_;
};

}  // namespace streamfuse::fusion
