// An operation stream: the ops one thread recorded on one device, queued until they must run.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include "backends/execution_stream.h"
#include "core/ir.h"
#include "fusion/processor.h"
#include "stream/queue.h"
#include "stream/segment_context.h"
#include "stream/trace_capture.h"

namespace streamfuse::stream {

class DeviceStreams;
struct TensorNode;

// Ops are numbered in recording order (their sequence number); an op has run once executed()
// exceeds its number. Only the owning thread records; any thread may drain (a sync, or a tensor
// of this stream used on another stream), so the queue is guarded by a mutex.
class Stream {
 public:
  // `id` names the stream to the backend (backends/execution_stream.h): unique per device.
  Stream(DeviceStreams& device, backends::StreamId id);
  backends::StreamId id() const { return id_; }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // The number the next recorded op gets. Owner thread only.
  std::uint64_t next_seq() const { return recorded_.load(std::memory_order_relaxed); }
  // Appends `op`. `pins` are nodes of other streams this op reads (one reference each, adopted):
  // they stay alive until the op has run, so no other stream drops them first. Then, unless
  // `may_run` is false (Drop ops, recorded from destructors, never run anything), runs what
  // must run: with fusion, what the segment processor decides (everything once the queue
  // reaches its bound); without, everything at the bound. Owner thread only.
  void record(core::OpDesc&& op, std::span<TensorNode* const> pins, bool may_run);
  // Runs every queued op (a sync). Any thread.
  void drain();
  // How many of this stream's ops have run. Any thread.
  std::uint64_t executed() const { return executed_.load(std::memory_order_acquire); }
  // True while some recorded op has not run. Any thread.
  bool pending() const { return executed() < recorded_.load(std::memory_order_acquire); }

  // sf::compile. Owner thread only.
  // Runs everything queued, then tells `capture` of every segment run until end_capture.
  void begin_capture(TraceCapture& capture);
  // Runs everything queued (the capture sees it run), then stops telling it; sets
  // capture.recorded to the ops recorded since begin_capture.
  void end_capture(TraceCapture& capture);
  // Stops telling the capture, running nothing (the call it recorded threw).
  void abort_capture();
  // Runs everything queued, then `steps` over `ops` (a replayed trace's ops, as they would have
  // been recorded): no recording, no matching.
  void replay(std::span<const core::OpDesc> ops, std::span<const CapturedStep> steps);

  // Test access: the queue as it stands (lock-free: call from the owner thread with no other
  // thread draining).
  const OperationQueue& queue_for_testing() const { return queue_; }

 private:
  // Runs queued ops (all of them in sync mode); requires mutex_. Returns the pins whose ops ran.
  std::vector<TensorNode*> advance_locked(fusion::ExecutionMode mode);

  DeviceStreams& device_;
  const backends::StreamId id_;
  std::mutex mutex_;
  OperationQueue queue_;
  SegmentContext context_;
  fusion::Processor processor_;
  bool fused_ = true;  // whether the processor has seen the queue (fusion was on last time)
  std::atomic<std::uint64_t> recorded_{0};  // written by the owner thread only
  std::atomic<std::uint64_t> executed_{0};
  std::vector<std::pair<std::uint64_t, TensorNode*>> pins_;  // (op number, node)
};

}  // namespace streamfuse::stream
