#include "stream/segment_context.h"

#include "stream/device_streams.h"
#include "stream/execute_op.h"

namespace streamfuse::stream {

void SegmentContext::run_operation(std::size_t i) {
  execute_op(queue_.global(i), *device_.handles, *device_.backend);
}

backends::TensorHandle SegmentContext::handle(core::TensorId id, core::Failure* failure) {
  return device_.handles->get(id, failure);
}

void SegmentContext::set_handle(core::TensorId id, backends::TensorHandle h) {
  device_.handles->insert(id, std::move(h));
}

void SegmentContext::set_failed(core::TensorId id, core::Failure why) {
  device_.handles->mark_failed(id, std::move(why));
}

void SegmentContext::erase(core::TensorId id) { device_.handles->erase(id); }

backends::Backend& SegmentContext::backend() { return *device_.backend; }

jit::KernelLauncher& SegmentContext::launcher() { return *device_.launcher; }

}  // namespace streamfuse::stream
