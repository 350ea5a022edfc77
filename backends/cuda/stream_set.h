// The CUDA streams of one device: one per streamfuse stream (backends/execution_stream.h),
// created on first use, and the ordering between them. Memory handed from one stream to another
// is ordered too: as the CachingAllocator's BlockHandoff, a reused block makes its new stream wait
// for the work of every stream that used it before (its StorageBlock::users).
//
// The wait is recorded when the block is handed out again, not when it is freed: the stream that
// frees a block has already queued every use of it, so an event recorded later covers them all,
// and a block reused by the stream that used it (the usual case) needs no event at all.
#pragma once

#include <cuda.h>

#include <memory>
#include <mutex>
#include <vector>

#include "backends/caching_allocator.h"
#include "backends/cuda/context.h"
#include "backends/execution_stream.h"

namespace streamfuse::backends::cuda {

class StreamSet final : public BlockHandoff {
 public:
  explicit StreamSet(std::shared_ptr<const DeviceContext> device);
  // Destroys the streams (waiting for their work); errors at process exit are ignored.
  ~StreamSet() override;
  StreamSet(const StreamSet&) = delete;
  StreamSet& operator=(const StreamSet&) = delete;

  // The CUDA stream of streamfuse stream `id`, created on first use (non-blocking: it never
  // synchronizes with the legacy default stream). Throws Error when the driver refuses.
  CUstream get(StreamId id);
  CUstream current() { return get(current_stream_id()); }

  // Work queued on `consumer` from now on starts after everything queued so far on `producer`.
  void order(StreamId producer, StreamId consumer);
  // Notes that `consumer`'s work uses `block` (a tensor shared between streams).
  static void note_use(const StorageBlock& block, StreamId consumer);
  // Waits for the work queued on `id` / on every stream.
  void synchronize(StreamId id);
  void synchronize_all();

  // The current stream's work is about to overwrite `block` (in place, or after reusing it): it
  // waits for the block's other users' work queued so far, and becomes its only user.
  void claim(const StorageBlock& block);
  // BlockHandoff: a reused block is claimed; a fresh one has no users to wait for.
  void handed_out(StorageBlock& block, bool reused) override;

  // The bit of StorageBlock::users that stands for stream `id`: its own below 63; 63 is shared
  // by every stream from 63 up (handing out a block with it set orders after all of them).
  static std::uint64_t user_bit(StreamId id) { return std::uint64_t{1} << (id < 63 ? id : 63); }

 private:
  std::shared_ptr<const DeviceContext> device_;
  std::mutex mutex_;
  std::vector<CUstream> streams_;  // by id; null until first used
};

}  // namespace streamfuse::backends::cuda
