// The ExecutionContexts fusion runs a stream's segments in: a segment at the head of the stream's
// queue, or a window of a replayed trace's ops (sf::compile). Both run on the device runtime's
// handle container, backend and kernel launcher (not owned).
#pragma once

#include <cstddef>
#include <span>

#include "fusion/context.h"
#include "stream/queue.h"

namespace streamfuse::stream {

struct StreamDevice;

// The device half of a context: handles, backend, launcher.
class DeviceContext : public fusion::ExecutionContext {
 public:
  explicit DeviceContext(const StreamDevice& device) : device_(device) {}

  void run_operation(std::size_t i) override;
  backends::TensorHandle handle(core::TensorId id, core::Failure* failure) override;
  void set_handle(core::TensorId id, backends::TensorHandle h) override;
  void set_failed(core::TensorId id, core::Failure why) override;
  void erase(core::TensorId id) override;
  backends::Backend& backend() override;
  jit::KernelLauncher& launcher() override;

 private:
  const StreamDevice& device_;
};

// The segment at the head of a stream's queue.
class SegmentContext final : public DeviceContext {
 public:
  SegmentContext(const OperationQueue& queue, const StreamDevice& device)
      : DeviceContext(device), queue_(queue) {}
  const core::OpDesc& op(std::size_t i) const override { return queue_.global(i); }

 private:
  const OperationQueue& queue_;
};

// Ops given as they would have been recorded (a replayed trace's), run a window at a time.
class ReplayContext final : public DeviceContext {
 public:
  ReplayContext(std::span<const core::OpDesc> ops, const StreamDevice& device)
      : DeviceContext(device), ops_(ops) {}
  // The next segment starts at ops[first].
  void set_first(std::size_t first) { first_ = first; }
  const core::OpDesc& op(std::size_t i) const override { return ops_[first_ + i]; }

 private:
  std::span<const core::OpDesc> ops_;
  std::size_t first_ = 0;
};

}  // namespace streamfuse::stream
