#include "backends/cuda/device_memory.h"

namespace streamfuse::backends::cuda {

DeviceMemory::DeviceMemory(std::shared_ptr<const DeviceContext> device)
    : device_(std::move(device)) {}

void* DeviceMemory::allocate(std::size_t bytes) {
  const Driver& d = device_->driver();
  device_->make_current();
  CUdeviceptr p = 0;
  const CUresult r = d.mem_alloc(&p, bytes);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) return nullptr;  // the allocator empties its cache and retries
  d.check(r, "cuMemAlloc of " + std::to_string(bytes) + " bytes on " + device_->name());
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(p));
}

void DeviceMemory::free(void* p, std::size_t) noexcept {
  const Driver& d = device_->driver();
  // At process exit the driver may be shutting down: a failure here has nobody to tell.
  if (d.ctx_set_current(device_->context()) == CUDA_SUCCESS)
    d.mem_free(static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(p)));
}

}  // namespace streamfuse::backends::cuda
