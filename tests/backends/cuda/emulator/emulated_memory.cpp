#include "tests/backends/cuda/emulator/emulated_memory.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_set>

#include "tests/backends/cuda/emulator/emulated_context.h"
#include "tests/backends/cuda/emulator/emulated_streams.h"

namespace streamfuse::backends::cuda::emulator {
namespace {

constexpr std::size_t kAlignment = 256;  // cuMemAlloc's guarantee

struct Memory {
  std::mutex mutex;
  struct Block {
    std::size_t bytes;    // as asked for: what copies and fills may reach
    std::size_t counted;  // rounded up to the alignment: what the capacity is charged
  };
  std::map<std::uintptr_t, Block> device;
  std::size_t used = 0;
  std::unordered_set<void*> host;
};

Memory& memory() {
  static Memory* m = new Memory;  // never destroyed: freed blocks may arrive during exit
  return *m;
}

std::size_t rounded(std::size_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

}  // namespace

CUresult allocate_device(CUdeviceptr* p, std::size_t bytes) {
  if (const CUresult r = check_current(); r != CUDA_SUCCESS) return r;
  if (!p || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  const std::size_t size = rounded(bytes);
  Memory& m = memory();
  {
    std::lock_guard lock(m.mutex);
    if (size < bytes || size > config().memory_bytes - m.used) return CUDA_ERROR_OUT_OF_MEMORY;
    m.used += size;  // reserved before the host allocation, so threads cannot overshoot together
  }
  // Exactly `bytes`: under AddressSanitizer a kernel reading past a buffer is caught.
  void* block = nullptr;
  if (posix_memalign(&block, kAlignment, bytes) != 0) block = nullptr;
  if (block) std::memset(block, 0xff, bytes);
  std::lock_guard lock(m.mutex);
  if (!block) {
    m.used -= size;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  m.device.emplace(reinterpret_cast<std::uintptr_t>(block), Memory::Block{bytes, size});
  *p = reinterpret_cast<CUdeviceptr>(block);
  return CUDA_SUCCESS;
}

CUresult free_device(CUdeviceptr p) {
  if (const CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  // Queued work may still read or write the block.
  synchronize_streams(false);
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  const auto it = m.device.find(static_cast<std::uintptr_t>(p));
  if (it == m.device.end()) return CUDA_ERROR_INVALID_VALUE;
  m.used -= it->second.counted;
  std::free(reinterpret_cast<void*>(it->first));
  m.device.erase(it);
  return CUDA_SUCCESS;
}

bool is_device_range(CUdeviceptr p, std::size_t bytes) {
  if (bytes == 0) return true;
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  auto it = m.device.upper_bound(static_cast<std::uintptr_t>(p));
  if (it == m.device.begin()) return false;
  --it;
  const std::uintptr_t offset = static_cast<std::uintptr_t>(p) - it->first;
  return offset < it->second.bytes && bytes <= it->second.bytes - offset;
}

void device_memory_info(std::size_t* free, std::size_t* total) {
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  if (free) *free = config().memory_bytes - m.used;
  if (total) *total = config().memory_bytes;
}

void free_all_device_memory() {
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  for (const auto& [start, block] : m.device) std::free(reinterpret_cast<void*>(start));
  m.device.clear();
  m.used = 0;
}

CUresult allocate_host(void** p, std::size_t bytes) {
  if (const CUresult r = check_current(); r != CUDA_SUCCESS) return r;
  if (!p || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  void* block = std::aligned_alloc(kAlignment, rounded(bytes));
  if (!block) return CUDA_ERROR_OUT_OF_MEMORY;
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  m.host.insert(block);
  *p = block;
  return CUDA_SUCCESS;
}

CUresult free_host(void* p) {
  if (const CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  if (m.host.erase(p) == 0) return CUDA_ERROR_INVALID_VALUE;
  std::free(p);
  return CUDA_SUCCESS;
}

}  // namespace streamfuse::backends::cuda::emulator
