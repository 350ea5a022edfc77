// OffsetContext: a segment seen from one of its ops on, for an optimization that runs another
// over the ops after its first ones (a product's element-wise epilogue, a product chain's middle
// kernel): op i of the view is op first + i of the segment.
#pragma once

#include <cstddef>
#include <utility>

#include "fusion/context.h"

namespace streamfuse::fusion {

class OffsetContext final : public ExecutionContext {
 public:
  OffsetContext(ExecutionContext& base, std::size_t first) : base_(base), first_(first) {}
  const core::OpDesc& op(std::size_t i) const override { return base_.op(first_ + i); }
  void run_operation(std::size_t i) override { base_.run_operation(first_ + i); }
  backends::TensorHandle handle(core::TensorId id, core::Failure* failure) override {
    return base_.handle(id, failure);
  }
  void set_handle(core::TensorId id, backends::TensorHandle h) override {
    base_.set_handle(id, std::move(h));
  }
  void set_failed(core::TensorId id, core::Failure why) override {
    base_.set_failed(id, std::move(why));
  }
  void erase(core::TensorId id) override { base_.erase(id); }
  backends::Backend& backend() override { return base_.backend(); }
  jit::KernelLauncher& launcher() override { return base_.launcher(); }

 private:
  ExecutionContext& base_;
  std::size_t first_;
};

}  // namespace streamfuse::fusion
