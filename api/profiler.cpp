// memory_stats, fusion_stats and friends: the device's allocator and fusion, through the runtime.
#include "streamfuse/profiler.h"

#include "runtime/runtime.h"

namespace streamfuse {

MemoryStats memory_stats(Device device) { return runtime::memory_stats(device); }
void reset_peak_memory_stats(Device device) { runtime::reset_peak_memory_stats(device); }
void empty_cache(Device device) { runtime::empty_cache(device); }
FusionStats fusion_stats(Device device) { return runtime::fusion_stats(device); }
void wait_for_compiles(Device device) { runtime::wait_for_compiles(device); }

}  // namespace streamfuse
