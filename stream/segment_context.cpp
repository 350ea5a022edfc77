#include "stream/segment_context.h"

#include "stream/execute_op.h"
#include "stream/runtime.h"

namespace streamfuse::stream {

void SegmentContext::run_operation(std::size_t i) {
  execute_op(queue_.global(i), runtime_.handles(), runtime_.backend());
}

backends::TensorHandle SegmentContext::handle(core::TensorId id, core::Failure* failure) {
  return runtime_.handles().get(id, failure);
}

void SegmentContext::set_handle(core::TensorId id, backends::TensorHandle h) {
  runtime_.handles().insert(id, std::move(h));
}

void SegmentContext::set_failed(core::TensorId id, core::Failure why) {
  runtime_.handles().mark_failed(id, std::move(why));
}

void SegmentContext::erase(core::TensorId id) { runtime_.handles().erase(id); }

backends::Backend& SegmentContext::backend() { return runtime_.backend(); }

jit::KernelLauncher& SegmentContext::launcher() { return runtime_.launcher(); }

}  // namespace streamfuse::stream
