#include "tests/fusion/mock_kind/builder.h"

#include "tests/fusion/mock_kind/optimization.h"

namespace streamfuse::testing::mock_kind {

void MockBuilder::register_op(const core::OpDesc& relative, const core::OpDesc&) {
  if (status_ == fusion::BuilderStatus::kClosed) return;
  if (relative.kind != core::OpKind::kAbs) {
    status_ = fusion::BuilderStatus::kClosed;
    return;
  }
  ++len_;
}

std::unique_ptr<fusion::Optimization> MockBuilder::build() const {
  return std::make_unique<MockOptimization>(len_);
}

void MockBuilder::reset() {
  status_ = fusion::BuilderStatus::kOpen;
  len_ = 0;
}

}  // namespace streamfuse::testing::mock_kind
