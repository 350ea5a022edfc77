#include "backends/cpu/host_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>

namespace streamfuse::backends::cpu {
namespace {
constexpr std::size_t kMmapThreshold = std::size_t{1} << 21;  // 2 MiB: one huge page
constexpr std::size_t kPrefaultThreshold = std::size_t{1} << 16;

// Maps every page of a fresh block with one madvise(MADV_POPULATE_WRITE) (Linux 5.14) instead
// of one page fault per 4 KiB page on first write: a tensor is written whole right after it is
// allocated, and the batched form costs ~25% less (measured: 8 MiB in 512 KiB blocks, 3.3 ms
// against 4.4 ms on the development VM). It matters on the first iteration of a model, whose
// activations all come from fresh pages. Blocks already mapped (glibc reuses freed memory) cost
// a walk of their page table. Where the kernel lacks it, pages fault in as before.
// Returns false when the pages cannot be had (ENOMEM): under overcommit, touching them later
// would wake the OOM killer; refusing now gives the caller a clean out-of-memory error.
bool prefault(void* p, std::size_t bytes) {
#ifdef MADV_POPULATE_WRITE
  static std::atomic<bool> supported{true};
  if (bytes < kPrefaultThreshold || !supported.load(std::memory_order_relaxed)) return true;
  static const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = (reinterpret_cast<std::uintptr_t>(p) + page - 1) & ~(page - 1);
  const auto end = (reinterpret_cast<std::uintptr_t>(p) + bytes) & ~(page - 1);
  if (end <= begin ||
      madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE) == 0)
    return true;
  if (errno == ENOMEM) return false;
  if (errno == EINVAL || errno == ENOSYS)
    supported.store(false, std::memory_order_relaxed);  // an older kernel: stop asking
  return true;
#else
  (void)p;
  (void)bytes;
  return true;
#endif
}

// Physical memory: a request beyond it cannot succeed, and under Linux's overcommit it might
// be granted and then kill the process when touched. Refusing it gives a clean error instead.
std::size_t physical_memory() {
  static const std::size_t bytes = static_cast<std::size_t>(sysconf(_SC_PHYS_PAGES)) *
                                   static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return bytes;
}
}  // namespace

void* HostMemory::allocate(std::size_t bytes) {
  if (bytes > physical_memory()) return nullptr;
  if (bytes >= kMmapThreshold) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    madvise(p, bytes, MADV_HUGEPAGE);  // advisory: ignored where THP is off
    if (prefault(p, bytes)) return p;
    munmap(p, bytes);
    return nullptr;
  }
  void* p = std::aligned_alloc(64, bytes);  // size classes are multiples of 64
  if (!p || prefault(p, bytes)) return p;
  std::free(p);
  return nullptr;
}

void* HostMemory::allocate_zeroed(std::size_t bytes, bool* zeroed) {
  *zeroed = false;
  if (bytes < kMmapThreshold) return allocate(bytes);
  if (bytes > physical_memory()) return nullptr;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  *zeroed = true;
  return p;
}

void* HostMemory::allocate_ahead(std::size_t bytes, bool* zeroed) {
  void* p = allocate(bytes);
  *zeroed = p != nullptr && bytes >= kMmapThreshold;
  return p;
}

void HostMemory::free(void* p, std::size_t bytes) noexcept {
  if (bytes >= kMmapThreshold)
    munmap(p, bytes);
  else
    std::free(p);
}

}  // namespace streamfuse::backends::cpu
