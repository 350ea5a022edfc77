// The traces of one compiled function (sf::compile, include/streamfuse/compile.h) and the
// protocol of a call: replay a trace that admits it, or record the call and keep what it ran.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "stream/replay_trace.h"
#include "stream/tensor_node.h"
#include "streamfuse/compile.h"

namespace streamfuse::runtime {

class CompiledFunction {
 public:
  explicit CompiledFunction(CompileOptions options);
  ~CompiledFunction();

  // Runs a trace that admits the call (tensor arguments `inputs`, number arguments `numbers`):
  // true, with the results' nodes (one reference each) appended to `results`. False when none
  // does, or when the call must run as plain code.
  bool replay(std::span<stream::TensorNode* const> inputs, std::span<const Scalar> numbers,
              std::vector<stream::TensorNode*>& results);
  // Starts recording a call on this thread; false when it is not recorded (see compile.h).
  bool begin(std::span<stream::TensorNode* const> inputs);
  // Ends this thread's recording: keeps a trace of the call if it can be replayed.
  void finish(std::span<stream::TensorNode* const> inputs, std::span<const Scalar> numbers,
              std::span<stream::TensorNode* const> results);
  // Ends this thread's recording of a call that threw.
  void abort();
  CompileStats stats() const;

 private:
  struct Kept {
    std::shared_ptr<stream::ReplayTrace> trace;  // shared: a run may outlive its eviction
    std::uint64_t last_use = 0;
  };
  // The device a call runs on, or false when its tensors are on several.
  static bool device_of(std::span<stream::TensorNode* const> inputs, Device& device);
  // This thread's stream of the call's device, or null when the call runs as plain code (its
  // tensors on several devices, fusion off, the thread exiting).
  static stream::Stream* fused_stream(std::span<stream::TensorNode* const> inputs, Device& device,
                                      stream::DeviceStreams*& streams);
  // Keeps `trace` (merged into one it generalizes, if any). Requires mutex_.
  void keep_locked(std::unique_ptr<stream::ReplayTrace> trace);

  const CompileOptions options_;
  mutable std::mutex mutex_;
  std::vector<Kept> traces_;
  std::uint64_t clock_ = 0;
  std::size_t recorded_ = 0;
  std::size_t replayed_ = 0;
  // Calls that could not be traced; past kMaxUntraceable the function records as plain code.
  std::size_t untraceable_ = 0;
  bool replays_ = true;
};

}  // namespace streamfuse::runtime
