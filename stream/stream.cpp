#include "stream/stream.h"

#include "stream/execute_op.h"
#include "stream/log.h"
#include "stream/runtime.h"
#include "stream/tensor_node.h"

namespace streamfuse::stream {

void Stream::record(OpDesc&& op, std::span<TensorNode* const> pins, bool may_run) {
  std::vector<TensorNode*> released;
  {
    std::lock_guard lock(mutex_);
    const std::uint64_t seq = recorded_.load(std::memory_order_relaxed);
    for (TensorNode* n : pins) pins_.emplace_back(seq, n);
    queue_.push(std::move(op));
    recorded_.store(seq + 1, std::memory_order_release);
    if (may_run && queue_.size() >= runtime_.queue_bound()) released = run_queue_locked();
  }
  for (TensorNode* n : released) release(n);  // may record Drops on this stream: unlocked
}

void Stream::drain() {
  std::vector<TensorNode*> released;
  {
    std::lock_guard lock(mutex_);
    if (queue_.empty() && pins_.empty()) return;
    released = run_queue_locked();
  }
  for (TensorNode* n : released) release(n);
}

std::vector<TensorNode*> Stream::run_queue_locked() {
  const std::size_t n = queue_.size();
  if (log_enabled(LogChannel::kStream) && n)
    log_line(LogChannel::kStream, "running " + std::to_string(n) + " queued ops");
  for (std::size_t i = 0; i < n; ++i)
    execute_op(queue_.global(i), runtime_.handles(), runtime_.backend());
  queue_.clear();
  executed_.store(recorded_.load(std::memory_order_relaxed), std::memory_order_release);
  std::vector<TensorNode*> released;
  released.reserve(pins_.size());
  for (auto& [seq, node] : pins_) released.push_back(node);
  pins_.clear();
  return released;
}

}  // namespace streamfuse::stream
