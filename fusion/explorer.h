// Explorer: finds a plan for a segment no stored plan covers, by feeding its ops to every
// OptimizationBuilder and keeping the best.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
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
  // Where the best builder lends its steps (OptimizationBuilder::lends_steps), the first op
  // alone is its plan instead when the best plan for the ops after it saves at least the bytes
  // of the builder's plan and of the best plan after that one; in lazy mode, once both of
  // those plans are known.
  std::optional<PlanDraft> explore(const SegmentQueue& queue, ExecutionMode mode);
  // Starts over (a new segment).
  void reset();
  std::size_t explored() const { return explored_; }
  // Whether no builder may take an op of `kind` as a segment's first op: such an op at the
  // queue's head runs on its own (the plan explore() would make for it is always that).
  bool runs_alone(core::OpKind kind) const { return runs_alone_[static_cast<std::size_t>(kind)]; }

 private:
  bool any_open() const;
  // The ready builder (len > 0, score > 0) with the best score, the longest of equals; or null.
  const OptimizationBuilder* best() const;
  // Feeds ops [from, to) of `queue` to the open builders, stopping once none is open; returns
  // the index after the last op fed.
  std::size_t feed(const SegmentQueue& queue, std::size_t from, std::size_t to);
  // The best score of a plan starting at op `start` of `queue`, from the builders reset and fed
  // from there until all close; nullopt in lazy mode while some is open (more ops are needed).
  std::optional<std::int64_t> score_from(const SegmentQueue& queue, std::size_t start,
                                         ExecutionMode mode);
  // Whether the segment's first op alone is a better plan than lender_'s: see explore().
  // nullopt while more ops are needed. Leaves the builders reset and fed from op 1.
  std::optional<bool> split_after_first(const SegmentQueue& queue, ExecutionMode mode);
  // The plan of the segment's first `chosen->len()` ops (null: its first op alone, run as it is),
  // with the trigger of the ops explored after it.
  PlanDraft draft(const SegmentQueue& queue, ExecutionMode mode,
                  const OptimizationBuilder* chosen) const;

  std::vector<std::unique_ptr<OptimizationBuilder>> builders_;
  std::size_t max_ops_;
  std::size_t explored_ = 0;
  // The builders are reset when a segment is first explored, not at every segment's start: most
  // segments match a stored plan and never reach them.
  bool builders_reset_ = false;
  // The lending builder's plan while the plans after it are explored (its builder is fed from
  // the segment's start again once it wins).
  struct Lender {
    std::size_t len = 0;
    std::int64_t score = 0;
    std::optional<std::int64_t> after;  // the best plan's score after it, once known
  };
  std::optional<Lender> lender_;
  std::array<bool, core::kNumOpKinds> runs_alone_{};  // by kind, from the builders
};

}  // namespace streamfuse::fusion
