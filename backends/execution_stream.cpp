#include "backends/execution_stream.h"

namespace streamfuse::backends {
namespace {

// Initial-exec TLS, as core/thread_local.h explains: read on every backend call.
thread_local __attribute__((tls_model("initial-exec"))) StreamId t_stream = 0;

}  // namespace

StreamId current_stream_id() { return t_stream; }

StreamScope::StreamScope(StreamId id) : previous_(t_stream) { t_stream = id; }
StreamScope::~StreamScope() { t_stream = previous_; }

}  // namespace streamfuse::backends
