// Host memory for the CPU allocator: 64-byte aligned; large blocks straight from mmap with
// transparent huge pages requested (fewer TLB misses on the multi-megabyte tensors that dominate
// memory traffic); blocks of 64 KiB and more prefaulted in one call.
#pragma once

#include "backends/caching_allocator.h"

namespace streamfuse::backends::cpu {

class HostMemory final : public MemorySource {
 public:
  void* allocate(std::size_t bytes) override;
  // Large blocks: fresh pages, neither prefaulted nor given huge pages, so that only the pages
  // written ever get memory (a KV cache allocated for the longest context and filled a position
  // at a time; as calloc does). Smaller ones: as allocate(), not zeroed.
  void* allocate_zeroed(std::size_t bytes, bool* zeroed) override;
  // As allocate(): blocks of 2 MiB and more are fresh anonymous pages, mapped and reading as
  // zeros (*zeroed); smaller ones come from the heap and may hold anything.
  void* allocate_ahead(std::size_t bytes, bool* zeroed) override;
  void free(void* p, std::size_t bytes) noexcept override;
};

}  // namespace streamfuse::backends::cpu
