#include "fusion/builders/elementwise/builder.h"

#include "fusion/builders/elementwise/optimization.h"

namespace streamfuse::fusion {

void ElementwiseBuilder::reset() {
  status_ = BuilderStatus::kOpen;
  len_ = 0;
  trace_.reset();
}

void ElementwiseBuilder::register_op(const core::OpDesc& relative, const core::OpDesc& global) {
  if (status_ == BuilderStatus::kClosed) return;
  if (!trace_.take(relative, global, static_cast<std::uint32_t>(len_))) {
    status_ = BuilderStatus::kClosed;
    return;
  }
  ++len_;
}

std::unique_ptr<Optimization> ElementwiseBuilder::build() const {
  TraceResult traced = trace_.finish();
  return std::make_unique<ElementwiseOptimization>(len_, std::move(traced.tensors),
                                                   std::move(traced.blocks));
}

}  // namespace streamfuse::fusion
