// ProductChainBuilder: a batched matrix product P = a @ b, the reduce builder's kernel over P's
// rows (reducing its last axis), whose one result W has P's shape, and a second batched product
// W @ c: attention as users write it, `softmax(where(mask, q @ k^T * scale, -inf)) @ v`. The
// optimization runs the three a tile of rows at a time where the backend can
// (Backend::execute_product_chain), so that neither P nor W is written to memory: at
// [8, 12, 512, 512] each is 100 MB, written once and read once more unfused.
//
// Takes only what a tile can hold: P and W die inside the chain (W at the second product), the
// kernel publishes nothing but W and reads P and tensors that exist before the chain, and both
// products have a b per matrix (b's batch dimensions those of the result), as attention's k and v
// have. Views and drops may come before or after the kernel's ops (users slice v out of a
// projection just before they use it, and C++ may evaluate matmul(softmax(s), v_view)'s arguments
// right to left): views of what exists run first, drops after.
// P or W held by a named variable die at its drop after the second product: the chain takes the
// drops up to the last of them.
// Anything else closes the builder, and the segment splits as before: the product, the reduce
// kernel (which takes the scale and mask too), the product.
//
// Only made for devices whose backend chains products (Backend::chains_products).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "fusion/builder.h"
#include "fusion/builders/reduce/builder.h"

namespace streamfuse::fusion {

class ProductChainBuilder final : public OptimizationBuilder {
 public:
  void register_op(const core::OpDesc& relative, const core::OpDesc& global) override;
  BuilderStatus status() const override { return status_; }
  bool may_start_with(core::OpKind kind) const override { return kind == core::OpKind::kMatmul; }
  std::size_t len() const override { return len_; }
  // The reduce kernel's own saving, and P and W each written and read once less.
  std::int64_t score() const override { return len_ ? middle_.score() + 4 * product_bytes_ : 0; }
  std::unique_ptr<Optimization> build() const override;
  void reset() override;

 private:
  enum class Phase : std::uint8_t { kFirst, kMiddle, kSecond, kDrops, kDone };
  bool take_first(const core::OpDesc& rel, const core::OpDesc& real);
  // The reduce builder closed: whether its kernel is a middle the chain can run a tile at a time.
  bool middle_fits();
  // The ops after the middle: views and drops of tensors made before the chain, then the second
  // product.
  bool take_second(const core::OpDesc& rel);
  bool made_in_chain(core::TensorId id) const;
  // A view or a drop recorded among the chain's ops, which runs on its own: a view before them
  // (when it reads nothing they make and is the last use of nothing they read), a drop after
  // them (a drop of P, held by a variable, ends what the chain waits for).
  static bool is_aside(const core::OpDesc& rel);
  bool takes_aside(const core::OpDesc& rel);
  std::size_t middle_first() const { return 1 + lead_; }
  // The second product's place (once taken).
  std::size_t second() const { return middle_first() + middle_len_ + aside_; }
  // After the second product: drops, until P and W are dead.
  bool take_drop(const core::OpDesc& rel);
  // The chain is an optimization from here on when nothing it makes is still held.
  void settle();
  // Whether the product `op` has a b per matrix of the chain's batch dimensions.
  bool batched_per_matrix(const core::OpDesc& op) const;

  BuilderStatus status_ = BuilderStatus::kOpen;
  Phase phase_ = Phase::kFirst;
  std::size_t len_ = 0;
  std::vector<core::OpDesc> relative_;  // the ops offered so far, relative form
  ReduceBuilder middle_;                // fed the ops after the first product
  std::size_t middle_len_ = 0;
  std::size_t lead_ = 0;              // views and drops between the first product and the middle
  std::size_t middle_fed_ = 0;        // ops offered to the middle
  std::size_t aside_ = 0;             // views and drops between the middle and the second product
  std::vector<core::TensorId> made_;  // what the first product and the middle make
  std::vector<core::TensorId> read_;  // what they read
  // P and W while something still holds them (a named variable, dropped after the product).
  std::vector<core::TensorId> pending_;
  Shape shape_;                     // P's (relative)
  core::TensorId product_ = 0;      // P
  core::TensorId weights_ = 0;      // W
  int product_input_ = -1;          // the middle kernel's input that P is
  std::int64_t product_bytes_ = 0;  // P's, at the sizes explored
};

}  // namespace streamfuse::fusion
