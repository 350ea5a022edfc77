#include "backends/cpu/host_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>

namespace streamfuse::backends::cpu {
namespace {
constexpr std::size_t kMmapThreshold = std::size_t{1} << 21;  // 2 MiB: one huge page

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
    return p;
  }
  return std::aligned_alloc(64, bytes);  // size classes are multiples of 64
}

void HostMemory::free(void* p, std::size_t bytes) noexcept {
  if (bytes >= kMmapThreshold)
    munmap(p, bytes);
  else
    std::free(p);
}

}  // namespace streamfuse::backends::cpu
