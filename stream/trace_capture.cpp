#include "stream/trace_capture.h"

#include "core/thread_local.h"

namespace streamfuse::stream {
namespace {

SF_THREAD_LOCAL TraceCapture* t_capture = nullptr;

}  // namespace

void TraceCapture::executed(const fusion::PlanRef& plan, const fusion::SegmentQueue& queue,
                            std::size_t len, bool explored_now) {
  steps.push_back(
      CapturedStep{plan, static_cast<std::uint32_t>(ops.size()), static_cast<std::uint32_t>(len)});
  for (std::size_t i = 0; i < len; ++i) ops.push_back(queue.global(i));
  explored = explored || explored_now;
}

TraceCapture* active_capture() { return t_capture; }
void set_active_capture(TraceCapture* capture) { t_capture = capture; }

void note_host_read() {
  if (t_capture) t_capture->read_values = true;
}

}  // namespace streamfuse::stream
