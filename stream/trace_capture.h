// What one call of a compiled function (sf::compile) ran, as its stream's processor ran it: the
// ops recorded during the call, as recorded, and the plans that ran them, in order. The replay
// trace (stream/replay_trace.h) is made from it.
#pragma once

#include <cstdint>
#include <vector>

#include "core/ir.h"
#include "fusion/processor.h"
#include "streamfuse/device.h"

namespace streamfuse::stream {

// One segment that ran: ops [first, first + len) of the capture, as `plan` (null: one op run on
// its own).
struct CapturedStep {
  fusion::PlanRef plan;
  std::uint32_t first = 0;
  std::uint32_t len = 0;
};

class Stream;

class TraceCapture final : public fusion::ExecutionObserver {
 public:
  TraceCapture(Stream& s, Device d) : stream(s), device(d) {}
  void executed(const fusion::PlanRef& plan, const fusion::SegmentQueue& queue, std::size_t len,
                bool explored) override;

  Stream& stream;  // the recording thread's stream of the call's device
  Device device;
  std::vector<core::OpDesc> ops;
  std::vector<CapturedStep> steps;
  // A plan was made during the call: the next call may run other plans (ones that match).
  bool explored = false;
  // The call read a tensor's value on the host (item, to_vector, printing, a copy to another
  // device): what it did next may depend on the value, which a replay would not read.
  bool read_values = false;
  // Ops recorded on the stream during the call (the stream's count): the capture saw them all
  // only if this equals ops.size().
  std::uint64_t recorded = 0;
};

// The capture recording on this thread, if any (one at a time: a compiled call inside another's
// recording runs as plain code, so the outer call's trace holds its ops).
TraceCapture* active_capture();
void set_active_capture(TraceCapture* capture);
// Called where a value is read on the host: the active capture, if any, notes it.
void note_host_read();

}  // namespace streamfuse::stream
