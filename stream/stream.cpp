#include "stream/stream.h"

#include "core/log.h"
#include "fusion/builders/registry.h"
#include "stream/cross_stream.h"
#include "stream/device_streams.h"
#include "stream/execute_op.h"

namespace streamfuse::stream {
Stream::Stream(DeviceStreams& device, backends::StreamId id)
    : device_(device),
      id_(id),
      context_(queue_, device.device()),
      processor_(*device.device().plans, fusion::make_builders(*device.device().backend)) {}

void Stream::record(core::OpDesc&& op, std::span<TensorNode* const> pins, bool may_run) {
  std::vector<TensorNode*> released;
  {
    std::lock_guard lock(mutex_);
    const std::uint64_t seq = recorded_.load(std::memory_order_relaxed);
    // A view or a drop into an empty queue, with fusion on and nothing to tell anyone: it runs
    // now, as the processor would run it on its own, without going through the queue (a loop of
    // views took 1.03-1.06x its time with fusion off, whose queue runs them at the sync).
    if (may_run && pins.empty() && queue_.empty() && pins_.empty() && fused_ &&
        device_.fusion_enabled() && processor_.runs_alone_unreported(op.kind)) {
      const backends::StreamScope scope(id_);
      execute_op(op, device_.handles(), device_.backend());
      recorded_.store(seq + 1, std::memory_order_release);
      executed_.store(seq + 1, std::memory_order_release);
      return;
    }
    for (TensorNode* n : pins) pins_.emplace_back(seq, n);
    queue_.push(std::move(op));
    recorded_.store(seq + 1, std::memory_order_release);
    if (may_run) {
      const bool full = queue_.size() >= device_.queue_bound();
      released = advance_locked(full ? fusion::ExecutionMode::kSync : fusion::ExecutionMode::kLazy);
    }
  }
  for (TensorNode* n : released) release(n);  // may record Drops on this stream: unlocked
}

void Stream::drain() {
  std::vector<TensorNode*> released;
  {
    std::lock_guard lock(mutex_);
    if (queue_.empty() && pins_.empty()) return;
    released = advance_locked(fusion::ExecutionMode::kSync);
  }
  for (TensorNode* n : released) release(n);
}

std::vector<TensorNode*> Stream::advance_locked(fusion::ExecutionMode mode) {
  // Whichever thread drains, the work goes to this stream's queue on the device.
  const backends::StreamScope scope(id_);
  const bool fuse = device_.fusion_enabled();
  if (fuse != fused_) {  // fusion switched on or off: the processor starts over
    processor_.reset();
    fused_ = fuse;
  }
  if (fuse) {
    processor_.process(queue_, context_, mode);
  } else if (mode == fusion::ExecutionMode::kSync) {
    if (log_enabled(core::LogChannel::kStream) && !queue_.empty())
      log_line(core::LogChannel::kStream,
               "running " + std::to_string(queue_.size()) + " queued ops");
    for (std::size_t i = 0; i < queue_.size(); ++i)
      execute_op(queue_.global(i), device_.handles(), device_.backend());
    queue_.clear();
  }
  // Ops run in order from the head: everything recorded but still queued has not run.
  const std::uint64_t executed = recorded_.load(std::memory_order_relaxed) - queue_.size();
  executed_.store(executed, std::memory_order_release);
  std::vector<TensorNode*> released;
  std::erase_if(pins_, [&](const std::pair<std::uint64_t, TensorNode*>& pin) {
    if (pin.first >= executed) return false;
    released.push_back(pin.second);
    return true;
  });
  return released;
}

void Stream::begin_capture(TraceCapture& capture) {
  drain();
  std::lock_guard lock(mutex_);
  processor_.set_observer(&capture);
  capture.recorded = recorded_.load(std::memory_order_relaxed);
}

void Stream::end_capture(TraceCapture& capture) {
  drain();
  std::lock_guard lock(mutex_);
  processor_.set_observer(nullptr);
  capture.recorded = recorded_.load(std::memory_order_relaxed) - capture.recorded;
}

void Stream::abort_capture() {
  std::lock_guard lock(mutex_);
  processor_.set_observer(nullptr);
}

void Stream::replay(std::span<const core::OpDesc> ops, std::span<const CapturedStep> steps) {
  drain();
  std::lock_guard lock(mutex_);
  const backends::StreamScope scope(id_);
  ReplayContext context(ops, device_.device());
  fusion::PlanStore& store = *device_.device().plans;
  for (const CapturedStep& step : steps) {
    context.set_first(step.first);
    if (!step.plan) {  // one op run on its own (fusion/processor.h)
      context.run_operation(0);
      continue;
    }
    store.touch(*step.plan);
    fusion::run_plan(*step.plan, context);
  }
}

}  // namespace streamfuse::stream
