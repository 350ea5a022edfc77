// A compiled function's call (sf::compile), recorded once and run again without recording: the
// ops it ran, with its tensors numbered by slot (its tensor arguments first, then the tensors it
// made), the plans that ran them, and the guard a later call must pass to run them the same way.
//
// The guard: the same device, number arguments equal bit for bit, and for each tensor argument
// the same dtype and rank, the same aliasing (which arguments are one tensor), and the same size
// pattern: each distinct size of the arguments gets an id by first appearance (size 1 is id 0),
// and a call must give the same ids in the same places. A size id is exact (the recorded size,
// and nothing else) until generalize() has seen the function recorded at another size of it that
// ran the same plans on the same ops, each dimension that changed having changed with that id:
// from then on the id is dynamic and the trace's dimensions bound to it take the call's size
// (a dimension that changed as the product of two argument sizes, a reshape to rows * columns,
// takes their product). A dynamic size must also differ from every other size of the trace, as
// relative forms would require (a plan matched at size ids that merged would be another plan).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "core/ir.h"
#include "stream/trace_capture.h"
#include "streamfuse/device.h"

namespace streamfuse::stream {

class DeviceStreams;
class Stream;
struct TensorNode;

// A call's size for each size id of a trace.
using SizeBinding = boost::container::small_vector<std::int64_t, 16>;

// What a trace is, apart from the instance it runs: plain values, copied by clone().
struct ReplayTraceData {
  struct InputGuard {
    DType dtype = kF32;
    int rank = 0;
    std::uint32_t alias = 0;  // the first argument that is the same tensor (itself if none)
  };
  struct Result {
    std::uint32_t slot = 0;
    std::uint32_t op = 0;   // locals: the op that made it
    std::uint32_t out = 0;  // and which of its outputs
  };

  Device device_;
  std::vector<InputGuard> inputs_;
  bool aliased_ = false;             // some argument is another's tensor
  std::vector<std::uint16_t> dims_;  // the size id of each argument dimension, in order
  std::vector<std::int64_t> sizes_;  // the recorded size of each size id (id 0: 1)
  std::vector<bool> dynamic_;        // per size id
  std::vector<Scalar> scalars_;
  std::vector<core::OpDesc> ops_;  // ids are slots; sizes as recorded
  std::vector<CapturedStep> steps_;
  std::vector<Result> results_;
  std::uint32_t locals_ = 0;
  // Per dimension of every tensor of ops_ (each op's inputs, then outputs, in order): a constant,
  // the size id it follows, or the two whose product it is (replay_trace.cpp, bound_size).
  std::vector<std::int32_t> bound_;
  std::vector<std::int64_t> constants_;
  std::vector<std::int32_t> products_;  // the distinct products bound_ holds
};

class ReplayTrace : private ReplayTraceData {
 public:
  ~ReplayTrace();
  // A copy (generalize a copy while runs of the original go on).
  std::unique_ptr<ReplayTrace> clone() const;

  // The trace of a call with tensor arguments `inputs` and number arguments `scalars` that ran
  // `capture` (on its device) and returned `results`. Null, with `why` saying what stops it,
  // when a replay could not do what the call did (it read a tensor it was not given, kept one it
  // made, read a value on the host, drew random numbers).
  static std::unique_ptr<ReplayTrace> make(std::span<TensorNode* const> inputs,
                                           std::span<const Scalar> scalars,
                                           const TraceCapture& capture,
                                           std::span<TensorNode* const> results, std::string& why);

  // Whether a call with these arguments may run this trace; if so `sizes` holds its size per
  // size id.
  bool admits(Device device, std::span<TensorNode* const> inputs, std::span<const Scalar> scalars,
              SizeBinding& sizes) const;
  // Makes this trace cover `other` (the same function recorded where some argument sizes
  // differ) when the two ran the same plans on the same ops and every dimension that differs
  // differs with one size id of the arguments. False, and nothing changed, otherwise.
  bool generalize(const ReplayTrace& other);

  // Runs the trace for a call it admits (`sizes` from admits) on this thread's `stream` of
  // `streams`' device; appends the results' nodes (one reference each) to `results`.
  void run(DeviceStreams& streams, Stream& stream, std::span<TensorNode* const> inputs,
           const SizeBinding& sizes, std::vector<TensorNode*>& results);

  std::size_t op_count() const { return ops_.size(); }
  std::size_t step_count() const { return steps_.size(); }
  // Size ids that follow the call.
  std::size_t dynamic_size_count() const;

 private:
  // The trace's ops with real ids and the call's sizes, patched in place per run.
  struct Instance;

  ReplayTrace() = default;
  // Sizes of the trace's ops not bound to a dynamic id (sorted, distinct, > 1), and the cached
  // instance, after the bindings changed.
  void refresh();
  std::unique_ptr<Instance> make_instance() const;

  std::unique_ptr<Instance> instance_;
  std::atomic<bool> instance_busy_{false};
};

}  // namespace streamfuse::stream
