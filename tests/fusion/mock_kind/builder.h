// MockBuilder: takes a run of abs ops from the start of a segment.
#pragma once

#include "fusion/builder.h"

namespace streamfuse::testing::mock_kind {

class MockBuilder final : public fusion::OptimizationBuilder {
 public:
  void register_op(const core::OpDesc& relative, const core::OpDesc& global) override;
  fusion::BuilderStatus status() const override { return status_; }
  bool may_start_with(core::OpKind kind) const override { return kind == core::OpKind::kAbs; }
  std::size_t len() const override { return len_; }
  // More than any real builder saves: when it has ops, exploration picks it.
  std::int64_t score() const override { return len_ > 0 ? std::int64_t{1} << 40 : 0; }
  std::unique_ptr<fusion::Optimization> build() const override;
  void reset() override;

 private:
  fusion::BuilderStatus status_ = fusion::BuilderStatus::kOpen;
  std::size_t len_ = 0;
};

}  // namespace streamfuse::testing::mock_kind
