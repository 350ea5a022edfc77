// Explorer: finds a plan for a segment no stored plan covers, by feeding its ops to every
// OptimizationBuilder and keeping the best.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "fusion/builder.h"
#include "fusion/plan.h"
#include "fusion/policy.h"
#include "fusion/segment.h"

namespace streamfuse::fusion {

// The most ops a plan covers: an endless element-wise loop becomes a repeating plan of bounded
// size, not one ever-growing kernel.
inline constexpr std::size_t kMaxSegmentOps = 64;

class Explorer {
 public:
  explicit Explorer(std::vector<std::unique_ptr<OptimizationBuilder>> builders,
                    std::size_t max_ops = kMaxSegmentOps);

  // Feeds the ops of `queue` not fed yet. In lazy mode, while some builder is open and the
  // segment is under the bound, returns nothing (exploration continues with later ops).
  // Otherwise returns the plan for the segment's head:
  // - the ready builder (len > 0, score > 0) with the best score, covering its len() ops, or
  // - the Operations strategy for the first op;
  // with a trigger saying when the plan may run again: the ops that followed it here
  // (OnOperations), OnSync when a sync ended the segment there, Always when nothing could
  // follow (every builder refused the first op, or the bound was reached).
  std::optional<PlanDraft> explore(const SegmentQueue& queue, ExecutionMode mode);
  // Starts over (a new segment).
  void reset();
  std::size_t explored() const { return explored_; }
  // Whether no builder may take an op of `kind` as a segment's first op: such an op at the
  // queue's head runs on its own (the plan explore() would make for it is always that).
  bool runs_alone(core::OpKind kind) const { return runs_alone_[static_cast<std::size_t>(kind)]; }

 private:
  bool any_open() const;

  std::vector<std::unique_ptr<OptimizationBuilder>> builders_;
  std::size_t max_ops_;
  std::size_t explored_ = 0;
  // The builders are reset when a segment is first explored, not at every segment's start: most
  // segments match a stored plan and never reach them.
  bool builders_reset_ = false;
  std::array<bool, core::kNumOpKinds> runs_alone_{};  // by kind, from the builders
};

}  // namespace streamfuse::fusion
