#include "backends/cuda/pinned_staging.h"

#include <algorithm>
#include <cstring>

namespace streamfuse::backends::cuda {

PinnedStaging::PinnedStaging(std::shared_ptr<const DeviceContext> device)
    : device_(std::move(device)) {}

PinnedStaging::~PinnedStaging() {
  const Driver& d = device_->driver();
  if (d.ctx_set_current(device_->context()) != CUDA_SUCCESS) return;  // the driver is gone
  for (int i = 0; i < 2; ++i) {
    if (done_[i]) {
      d.event_synchronize(done_[i]);
      d.event_destroy(done_[i]);
    }
    if (buffers_[i]) d.mem_free_host(buffers_[i]);
  }
}

void PinnedStaging::ensure_buffers() {
  if (buffers_[0]) return;
  const Driver& d = device_->driver();
  device_->make_current();
  for (int i = 0; i < 2; ++i) {
    d.check(d.mem_alloc_host(&buffers_[i], kChunkBytes),
            "allocating pinned host memory for copies to " + device_->name());
    d.check(d.event_create(&done_[i], CU_EVENT_DISABLE_TIMING),
            "creating an event on " + device_->name());
  }
}

void PinnedStaging::to_device(CUdeviceptr device, const void* host, std::size_t bytes,
                              CUstream stream) {
  if (bytes == 0) return;
  std::lock_guard lock(mutex_);
  ensure_buffers();
  const Driver& d = device_->driver();
  device_->make_current();
  const auto* src = static_cast<const char*>(host);
  for (std::size_t done = 0, chunk = 0; done < bytes; done += kChunkBytes, chunk ^= 1) {
    const std::size_t n = std::min(kChunkBytes, bytes - done);
    // The buffer's previous DMA (two chunks ago, or an earlier transfer) must have read it.
    d.check(d.event_synchronize(done_[chunk]), "copying to " + device_->name());
    std::memcpy(buffers_[chunk], src + done, n);
    d.check(d.memcpy_htod_async(device + done, buffers_[chunk], n, stream),
            "copying to " + device_->name());
    d.check(d.event_record(done_[chunk], stream), "copying to " + device_->name());
  }
}

void PinnedStaging::to_host(void* host, CUdeviceptr device, std::size_t bytes, CUstream stream) {
  if (bytes == 0) return;
  std::lock_guard lock(mutex_);
  ensure_buffers();
  const Driver& d = device_->driver();
  device_->make_current();
  auto* dst = static_cast<char*>(host);
  // Two chunks in flight: while one is copied out of its buffer, the next DMA fills the other.
  const auto start = [&](std::size_t offset, int chunk) {
    const std::size_t n = std::min(kChunkBytes, bytes - offset);
    d.check(d.memcpy_dtoh_async(buffers_[chunk], device + offset, n, stream),
            "copying from " + device_->name());
    d.check(d.event_record(done_[chunk], stream), "copying from " + device_->name());
  };
  start(0, 0);
  for (std::size_t done = 0, chunk = 0; done < bytes; done += kChunkBytes, chunk ^= 1) {
    if (done + kChunkBytes < bytes) start(done + kChunkBytes, static_cast<int>(chunk ^ 1));
    d.check(d.event_synchronize(done_[chunk]),
            "copying from " + device_->name() + " (a kernel or copy before it failed)");
    std::memcpy(dst + done, buffers_[chunk], std::min(kChunkBytes, bytes - done));
  }
}

}  // namespace streamfuse::backends::cuda
