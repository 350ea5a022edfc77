// Which streamfuse stream the calling thread runs ops for. A backend that queues work of its own
// (CUDA: one CUDA stream per streamfuse stream) puts a call's work on that stream's queue, so the
// ops of one stream stay in order and those of different streams may overlap. The CPU runs every
// call to completion and ignores it.
#pragma once

#include <cstdint>

namespace streamfuse::backends {

// 0: no stream (a call from outside any stream's ops, e.g. a tensor made from host data before
// the thread recorded anything); streams number from 1.
using StreamId = std::uint32_t;

// The calling thread's stream: the innermost StreamScope's, else 0.
StreamId current_stream_id();

// Sets the calling thread's stream for its lifetime (nested scopes restore the outer one).
class StreamScope {
 public:
  explicit StreamScope(StreamId id);
  ~StreamScope();
  StreamScope(const StreamScope&) = delete;
  StreamScope& operator=(const StreamScope&) = delete;

 private:
  StreamId previous_;
};

}  // namespace streamfuse::backends
