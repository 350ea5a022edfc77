// The ExecutionContext fusion runs a stream's segments in: the stream's queue, the device's
// handle container, backend and kernel launcher (not owned: the device runtime's).
#pragma once

#include "fusion/context.h"
#include "stream/queue.h"

namespace streamfuse::stream {

struct StreamDevice;

class SegmentContext final : public fusion::ExecutionContext {
 public:
  SegmentContext(const OperationQueue& queue, const StreamDevice& device)
      : queue_(queue), device_(device) {}

  const core::OpDesc& op(std::size_t i) const override { return queue_.global(i); }
  void run_operation(std::size_t i) override;
  backends::TensorHandle handle(core::TensorId id, core::Failure* failure) override;
  void set_handle(core::TensorId id, backends::TensorHandle h) override;
  void set_failed(core::TensorId id, core::Failure why) override;
  void erase(core::TensorId id) override;
  backends::Backend& backend() override;
  jit::KernelLauncher& launcher() override;

 private:
  const OperationQueue& queue_;
  const StreamDevice& device_;
};

}  // namespace streamfuse::stream
