// Device memory for a CachingAllocator: cuMemAlloc / cuMemFree in the device's primary context.
// Blocks are 256-byte aligned (cuMemAlloc's guarantee), more than the 16 bytes vector loads need.
//
// Freeing is immediate (cuMemFree waits for the device to finish with the memory); the caching
// allocator keeps freed blocks for reuse, so that happens when its bound is exceeded or the cache
// is emptied, not per tensor.
#pragma once

#include <cstdint>
#include <memory>

#include "backends/caching_allocator.h"
#include "backends/cuda/context.h"

namespace streamfuse::backends::cuda {

// The CUdeviceptr of a device address held as a pointer (StorageBlock::data, element_ptr).
inline CUdeviceptr device_address(const void* p) {
  return static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(p));
}

class DeviceMemory final : public MemorySource {
 public:
  explicit DeviceMemory(std::shared_ptr<const DeviceContext> device);

  // nullptr when the device is out of memory; other driver failures throw Error.
  void* allocate(std::size_t bytes) override;
  void free(void* p, std::size_t bytes) noexcept override;

 private:
  std::shared_ptr<const DeviceContext> device_;
};

}  // namespace streamfuse::backends::cuda
