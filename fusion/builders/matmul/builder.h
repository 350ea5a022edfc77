// MatmulBuilder: a matrix product as the anchor, and the chain of steps after it that the
// backend applies to the product as it stores it (oneDNN binary post-ops on the CPU): bias adds,
// residual adds, scaling, each `value = value <op> operand` with the running value on the left
// (or either side of + and *), f32 throughout, the operand an existing tensor that broadcasts to
// the product's shape, or a scalar. `x @ w + b + r` writes one tensor instead of three.
//
// Every value of the chain but the last must die inside the plan (moved into the next step, or
// dropped): a value something still holds would have to be stored. Anything else closes the
// builder: what follows (an activation, a softmax) is the other builders' to fuse, and it reads
// the chain's result as it would read the product.
//
// Only made for devices whose backend fuses product epilogues (Backend::fuses_product_epilogues):
// on the others, a product followed by one element-wise kernel is what the element-wise builder
// already makes of the same ops.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "fusion/builder.h"
#include "fusion/builders/matmul/optimization.h"

namespace streamfuse::fusion {

class MatmulBuilder final : public OptimizationBuilder {
 public:
  void register_op(const core::OpDesc& relative, const core::OpDesc& global) override;
  BuilderStatus status() const override { return status_; }
  bool may_start_with(core::OpKind kind) const override { return kind == core::OpKind::kMatmul; }
  std::size_t len() const override { return len_; }
  // The chain's intermediate values, each written and read once unfused.
  std::int64_t score() const override {
    return 2 * value_bytes_ * static_cast<std::int64_t>(ready_steps_);
  }
  // Its steps cost the same in the kernel that reads the product (the reduce or element-wise
  // builder's, after it): oneDNN applies them only in its brgemm kernels, and after the product,
  // as one more pass over it, in every other layout (attention's q @ kᵀ over strided heads).
  bool lends_steps() const override { return true; }
  std::unique_ptr<Optimization> build() const override;
  void reset() override;

 private:
  bool take_product(const core::OpDesc& rel, const core::OpDesc& real);
  bool take_step(const core::OpDesc& rel);
  bool take_drop(const core::OpDesc& rel);
  bool in_chain(core::TensorId id) const;

  BuilderStatus status_ = BuilderStatus::kOpen;
  std::size_t seen_ = 0;         // ops taken
  std::size_t len_ = 0;          // ops of the longest prefix that makes an optimization
  std::size_t ready_steps_ = 0;  // steps in that prefix
  std::int64_t value_bytes_ = 0;
  Shape shape_;               // the product's (relative)
  core::TensorId value_ = 0;  // the running value: the product, then each step's result
  struct ChainValue {
    core::TensorId id = 0;
    bool dead = false;
  };
  boost::container::small_vector<ChainValue, 8> chain_;  // the product, then each step's result
  std::vector<MatmulStep> steps_;
  // The ops after the product as offered, for the element-wise epilogue build() makes of them.
  std::vector<core::OpDesc> relative_after_, global_after_;
};

}  // namespace streamfuse::fusion
