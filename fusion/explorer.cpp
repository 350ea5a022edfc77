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
  lender_.reset();
}

bool Explorer::any_open() const {
  for (const auto& b : builders_)
    if (b->status() == BuilderStatus::kOpen) return true;
  return false;
}

const OptimizationBuilder* Explorer::best() const {
  const OptimizationBuilder* best = nullptr;
  for (const auto& b : builders_) {
    if (b->len() == 0 || b->score() <= 0) continue;
    if (!best || b->score() > best->score() ||
        (b->score() == best->score() && b->len() > best->len()))
      best = b.get();
  }
  return best;
}

std::size_t Explorer::feed(const SegmentQueue& queue, std::size_t from, std::size_t to) {
  std::size_t i = from;
  for (; i < to && any_open(); ++i) {
    const core::OpDesc& rel = queue.relative(i);
    const core::OpDesc& real = queue.global(i);
    for (auto& b : builders_)
      if (b->status() == BuilderStatus::kOpen) b->register_op(rel, real);
  }
  return i;
}

std::optional<std::int64_t> Explorer::score_from(const SegmentQueue& queue, std::size_t start,
                                                 ExecutionMode mode) {
  for (auto& b : builders_) b->reset();
  const std::size_t end = feed(queue, start, std::min(queue.size(), start + max_ops_));
  if (mode == ExecutionMode::kLazy && any_open() && end - start < max_ops_) return std::nullopt;
  const OptimizationBuilder* b = best();
  return b ? b->score() : 0;
}

std::optional<bool> Explorer::split_after_first(const SegmentQueue& queue, ExecutionMode mode) {
  // Once known, the score after the lender's plan stays known (the builders closed on the ops
  // they were fed): a lazy segment's later calls only feed the plan after the first op again.
  if (!lender_->after) lender_->after = score_from(queue, lender_->len, mode);
  if (!lender_->after) return std::nullopt;
  const std::optional<std::int64_t> after_first = score_from(queue, 1, mode);
  if (!after_first) return std::nullopt;
  return *after_first >= lender_->score + *lender_->after;
}

std::optional<PlanDraft> Explorer::explore(const SegmentQueue& queue, ExecutionMode mode) {
  if (!builders_reset_) {
    for (auto& b : builders_) b->reset();
    builders_reset_ = true;
  }
  if (!lender_) {
    explored_ = feed(queue, explored_, std::min(queue.size(), max_ops_));
    if (mode == ExecutionMode::kLazy && any_open() && explored_ < max_ops_) return std::nullopt;
    const OptimizationBuilder* chosen = best();
    if (!chosen || !chosen->lends_steps() || chosen->len() < 2) return draft(queue, mode, chosen);
    lender_ = Lender{chosen->len(), chosen->score(), std::nullopt};
  }
  const std::optional<bool> split = split_after_first(queue, mode);
  if (!split) return std::nullopt;  // lazy: the plans after it need more ops
  lender_.reset();
  if (*split) return draft(queue, mode, nullptr);
  // The builders again as the segment's ops left them: fed the same ops, the same state.
  for (auto& b : builders_) b->reset();
  feed(queue, 0, explored_);
  return draft(queue, mode, best());
}

PlanDraft Explorer::draft(const SegmentQueue& queue, ExecutionMode mode,
                          const OptimizationBuilder* chosen) const {
  PlanDraft plan;
  const std::size_t len = chosen ? chosen->len() : 1;
  for (std::size_t i = 0; i < len; ++i) plan.ops.push_back(queue.relative(i));
  if (chosen) plan.optimization = chosen->build();

  Trigger trigger;
  if (len < explored_) {
    trigger.kind = Trigger::Kind::kOnOperations;
    for (std::size_t i = len; i < explored_; ++i) trigger.ops.push_back(queue.relative(i));
  } else if (mode == ExecutionMode::kSync && explored_ < max_ops_ && len == queue.size()) {
    trigger.kind = Trigger::Kind::kOnSync;
  } else {
    trigger.kind = Trigger::Kind::kAlways;
  }
  plan.triggers.push_back(std::move(trigger));
  return plan;
}

}  // namespace streamfuse::fusion
