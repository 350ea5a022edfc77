#include "fusion/explorer.h"

#include <algorithm>

namespace streamfuse::fusion {

Explorer::Explorer(std::vector<std::unique_ptr<OptimizationBuilder>> builders, std::size_t max_ops)
    : builders_(std::move(builders)), max_ops_(max_ops) {
  for (unsigned k = 0; k < core::kNumOpKinds; ++k)
    runs_alone_[k] = std::none_of(builders_.begin(), builders_.end(), [&](const auto& b) {
      return b->may_start_with(static_cast<core::OpKind>(k));
    });
}

void Explorer::reset() {
  builders_reset_ = false;
  explored_ = 0;
}

bool Explorer::any_open() const {
  for (const auto& b : builders_)
    if (b->status() == BuilderStatus::kOpen) return true;
  return false;
}

std::optional<PlanDraft> Explorer::explore(const SegmentQueue& queue, ExecutionMode mode) {
  if (!builders_reset_) {
    for (auto& b : builders_) b->reset();
    builders_reset_ = true;
  }
  while (explored_ < queue.size() && explored_ < max_ops_ && any_open()) {
    const core::OpDesc& rel = queue.relative(explored_);
    const core::OpDesc& real = queue.global(explored_);
    for (auto& b : builders_)
      if (b->status() == BuilderStatus::kOpen) b->register_op(rel, real);
    ++explored_;
  }
  const bool bounded = explored_ >= max_ops_;
  if (mode == ExecutionMode::kLazy && any_open() && !bounded) return std::nullopt;

  const OptimizationBuilder* best = nullptr;
  for (const auto& b : builders_) {
    if (b->len() == 0 || b->score() <= 0) continue;
    if (!best || b->score() > best->score() ||
        (b->score() == best->score() && b->len() > best->len()))
      best = b.get();
  }
  PlanDraft plan;
  const std::size_t len = best ? best->len() : 1;
  for (std::size_t i = 0; i < len; ++i) plan.ops.push_back(queue.relative(i));
  if (best) plan.optimization = best->build();

  Trigger trigger;
  if (len < explored_) {
    trigger.kind = Trigger::Kind::kOnOperations;
    for (std::size_t i = len; i < explored_; ++i) trigger.ops.push_back(queue.relative(i));
  } else if (mode == ExecutionMode::kSync && !bounded && len == queue.size()) {
    trigger.kind = Trigger::Kind::kOnSync;
  } else {
    trigger.kind = Trigger::Kind::kAlways;
  }
  plan.triggers.push_back(std::move(trigger));
  return plan;
}

}  // namespace streamfuse::fusion
