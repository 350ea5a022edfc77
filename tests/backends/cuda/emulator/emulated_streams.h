// Streams and events of the emulated GPU. Like a GPU's, streams are asynchronous: each has a
// worker thread that runs its queue (copies, memsets, kernel launches, event records and waits)
// in order while the host goes on, so a caller that reads results without synchronizing, or
// orders two streams wrongly, sees stale data or a data race (ThreadSanitizer), as on a GPU.
//
// Work given to the legacy default stream (a null CUstream, CU_STREAM_LEGACY or
// CU_STREAM_PER_THREAD) runs on the calling thread once every blocking stream's queued work
// finished: what the legacy stream's implicit synchronization amounts to when its own work is
// synchronous.
#pragma once

#include <cuda.h>

#include <functional>

namespace streamfuse::backends::cuda::emulator {

using Work = std::function<void()>;

// cuStreamCreate: flags CU_STREAM_DEFAULT (blocking) or CU_STREAM_NON_BLOCKING.
CUresult create_stream(CUstream* stream, unsigned flags);
// cuStreamDestroy: returns once the stream's queued work ran.
CUresult destroy_stream(CUstream stream);
// Queues `work` on `stream` (or runs it, for the legacy stream). CUDA_ERROR_INVALID_HANDLE for a
// stream that does not exist.
CUresult submit(CUstream stream, Work work);
CUresult synchronize_stream(CUstream stream);
// CUDA_ERROR_NOT_READY while the stream has work queued or running.
CUresult query_stream(CUstream stream);
// Waits until every stream (every blocking one when `blocking_only`) ran its queued work.
void synchronize_streams(bool blocking_only);

// cuEventCreate / Destroy / Record / Synchronize / Query / ElapsedTime. An event stands for the
// point of its last record: waits capture that point, so recording it again later does not
// change what an earlier cuStreamWaitEvent waits for.
CUresult create_event(CUevent* event, unsigned flags);
CUresult destroy_event(CUevent event);
CUresult record_event(CUevent event, CUstream stream);
CUresult synchronize_event(CUevent event);
CUresult query_event(CUevent event);
CUresult elapsed_time(float* ms, CUevent start, CUevent end);
// cuStreamWaitEvent: work queued on `stream` later waits for the event's recorded point.
CUresult wait_event(CUstream stream, CUevent event);

}  // namespace streamfuse::backends::cuda::emulator
