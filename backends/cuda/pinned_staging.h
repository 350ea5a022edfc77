// Copies between host memory the user owns (pageable) and device memory, through a pinned
// (page-locked) buffer of the device: the DMA engines read and write only pinned memory, so a
// copy from pageable memory is staged anyway; staging it here in chunks keeps the buffer bounded
// and the transfer at full speed.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <memory>
#include <mutex>

#include "backends/cuda/context.h"

namespace streamfuse::backends::cuda {

class PinnedStaging {
 public:
  // Bytes of one chunk; two chunks alternate, so copying one overlaps the DMA of the other.
  static constexpr std::size_t kChunkBytes = std::size_t{4} << 20;

  explicit PinnedStaging(std::shared_ptr<const DeviceContext> device);
  ~PinnedStaging();
  PinnedStaging(const PinnedStaging&) = delete;
  PinnedStaging& operator=(const PinnedStaging&) = delete;

  // Copies `bytes` from `host` to `device` on `stream`; returns once `host` may be changed (the
  // device copy may still be in flight on `stream`, ordered before later work there). Throws
  // Error when the driver fails.
  void to_device(CUdeviceptr device, const void* host, std::size_t bytes, CUstream stream);
  // Copies `bytes` from `device` to `host` after the work queued on `stream`; returns when done.
  void to_host(void* host, CUdeviceptr device, std::size_t bytes, CUstream stream);

 private:
  void ensure_buffers();  // requires mutex_

  std::shared_ptr<const DeviceContext> device_;
  std::mutex mutex_;  // one transfer at a time uses the buffers
  void* buffers_[2] = {nullptr, nullptr};
  CUevent done_[2] = {nullptr, nullptr};  // when each buffer's last DMA finished
};

}  // namespace streamfuse::backends::cuda
