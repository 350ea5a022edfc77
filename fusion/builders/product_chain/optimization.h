// ProductChainOptimization: runs a segment's first product, the reduce kernel after it and the
// product of that kernel's result (ProductChainBuilder) a tile of rows at a time through the
// backend (Backend::execute_product_chain) and the launcher's row kernel
// (jit::KernelLauncher::row_kernel): neither intermediate is written to memory. Where either has
// nothing for this run (a layout the batched GEMM does not take, a CPU without FMA, the kernel
// still compiling), the three run one after the other, as the plans without the chain would.
// The results are the same bits either way.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "fusion/builders/reduce/optimization.h"
#include "fusion/optimization.h"

namespace streamfuse::fusion {

class ProductChainOptimization final : public Optimization {
 public:
  // Op 0 is the first product; then `lead` views and drops that need nothing the chain makes,
  // the `middle_len` ops `middle` covers, `aside` more views and drops, the second product, and
  // `drops` drops (the last of them of P or W, where a named variable held them). P is the
  // middle kernel's input `product_input`.
  ProductChainOptimization(std::size_t lead, std::size_t middle_len, std::size_t aside,
                           std::size_t drops, int product_input,
                           std::unique_ptr<ReduceOptimization> middle);

  std::size_t len() const override { return second() + 1 + drops_; }
  void execute(ExecutionContext& context) override;
  std::string describe() const override;
  std::string_view codec() const override { return "product_chain"; }
  void read_ahead(jit::KernelCache& kernels) const override { middle_->read_ahead(kernels); }

  // The middle kernel's input that guards P (guard.h), or -1.
  int guard_for_testing() const { return guard_; }

 private:
  // The chain a tile at a time; false, having changed nothing, where it cannot run so.
  bool run_tiled(ExecutionContext& context) const;
  void run_one_after_another(ExecutionContext& context) const;

  // The product's and the middle's ops, one by one, then the second product.
  void run_chain_ops(ExecutionContext& context) const;
  // Whether op i is a view or drop among the chain's ops (not after the second product).
  bool is_aside(std::size_t i) const;
  std::size_t middle_first() const { return 1 + lead_; }
  std::size_t middle_end() const { return middle_first() + middle_len_; }
  std::size_t second() const { return middle_end() + aside_; }

  std::size_t lead_, middle_len_, aside_, drops_;
  int product_input_;
  int guard_;  // the kernel's input that guards P, or -1
  std::unique_ptr<ReduceOptimization> middle_;
};

}  // namespace streamfuse::fusion
