// Memory statistics of a device's caching allocator.
#pragma once

#include <cstdint>

#include "streamfuse/device.h"

namespace streamfuse {

struct MemoryStats {
  std::int64_t bytes_in_use = 0;       // bytes of live tensors (as requested)
  std::int64_t peak_bytes_in_use = 0;  // highest bytes_in_use since start or the last reset
  std::int64_t bytes_cached = 0;       // freed blocks kept for reuse
  std::int64_t bytes_reserved = 0;     // taken from the system: live blocks plus cached blocks
  std::int64_t live_buffers = 0;       // buffers currently held by tensors
  std::int64_t allocations = 0;        // allocation requests served
  std::int64_t cache_hits = 0;         // requests served from the cache
};

// The statistics of `device`'s allocator. Queued ops that have not run yet are not counted:
// call synchronize() first for a settled figure.
MemoryStats memory_stats(Device device = Device::cpu());
// Restarts peak_bytes_in_use from the current bytes_in_use.
void reset_peak_memory_stats(Device device = Device::cpu());
// Returns every cached block of `device` to the system.
void empty_cache(Device device = Device::cpu());

}  // namespace streamfuse
