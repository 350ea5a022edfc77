// Processor: the loop that turns a stream's queued ops into executions. After each recorded op
// (lazy mode) or at a sync, it asks the Policy what to do with the segment at the head of the
// queue, explores when nothing stored matches, runs the chosen plan on the head, drains the ops
// it ran, and goes on with the rest. An op at the head that no builder may start a segment with
// (a view, a drop) runs on its own without being matched.
//
// Invariants:
// - ops run in recorded order, each exactly once;
// - the policy (or the explorer) has seen exactly the queue's first fed_ ops;
// - in sync mode the queue is empty on return.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "core/log.h"
#include "fusion/context.h"
#include "fusion/explorer.h"
#include "fusion/plan_store.h"
#include "fusion/policy.h"
#include "fusion/segment.h"

namespace streamfuse::fusion {

// Told of every segment a processor runs: how sf::compile records what a call ran
// (stream/trace_capture.h). Called with the stream's lock held, from whichever thread drains.
class ExecutionObserver {
 public:
  virtual ~ExecutionObserver() = default;
  // The queue's first `len` ops ran as `plan` (null: one op run on its own, one that no plan
  // starts with or one past the exploration cap); `explored`: the plan was made for this segment,
  // so the next call may match another.
  virtual void executed(const PlanRef& plan, const SegmentQueue& queue, std::size_t len,
                        bool explored) = 0;
};

class Processor {
 public:
  Processor(PlanStore& store, std::vector<std::unique_ptr<OptimizationBuilder>> builders,
            std::size_t max_segment_ops = kMaxSegmentOps);

  // Runs what `mode` requires of `queue`'s ops; ops that ran are drained from it.
  void process(SegmentQueue& queue, ExecutionContext& context, ExecutionMode mode);
  // Forgets the ops seen so far (the queue changed behind the processor's back).
  void reset() {
    start_segment();
    previous_.reset();
  }
  // Tells `observer` (null: nobody) of every segment run from now on.
  void set_observer(ExecutionObserver* observer) { observer_ = observer; }
  // Whether an op of `kind` at the head of an empty queue would run on its own now, unmatched and
  // unreported: nothing fed or explored, no observer, no fusion log. Its stream may then run it as
  // it records it, without queueing it (Stream::record): what process() would do, less the queue.
  // Inline: a stream asks it for every op it records.
  bool runs_alone_unreported(core::OpKind kind) const {
    return explorer_.runs_alone(kind) && !exploring_ && fed_ == 0 && observer_ == nullptr &&
           !core::log_enabled(core::LogChannel::kFusion);
  }

 private:
  // Runs `plan` on the head of the queue and starts a new segment after it.
  void execute(const PlanRef& plan, SegmentQueue& queue, ExecutionContext& context, bool explored);
  void start_segment();
  // Runs the queue's head op on its own (`why` prefixes its log line) and drains it; the
  // segment after it has not started yet, and the plan that ran before it is still previous_
  // (its successor is the next segment that has a plan).
  void run_alone(SegmentQueue& queue, ExecutionContext& context, const char* why);

  PlanStore& store_;
  Policy policy_;
  Explorer explorer_;
  std::size_t fed_ = 0;
  bool exploring_ = false;
  PlanRef previous_;      // the plan that ran last, until the next segment's first op is seen
  bool entered_ = false;  // a plan ran: its segment's first op was noted as an entry
  ExecutionObserver* observer_ = nullptr;
};

}  // namespace streamfuse::fusion
