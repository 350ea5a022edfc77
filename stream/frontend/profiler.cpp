// memory_stats and friends: the device's allocator, through its runtime.
#include "streamfuse/profiler.h"

#include "stream/runtime.h"

namespace streamfuse {

MemoryStats memory_stats(Device device) {
  return stream::DeviceRuntime::get(device).backend().memory_stats();
}
void reset_peak_memory_stats(Device device) {
  stream::DeviceRuntime::get(device).backend().reset_peak_memory_stats();
}
void empty_cache(Device device) { stream::DeviceRuntime::get(device).backend().empty_cache(); }

}  // namespace streamfuse
