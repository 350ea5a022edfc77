// memory_stats, fusion_stats and friends: the device's allocator and fusion, through its runtime.
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

FusionStats fusion_stats(Device device) {
  return stream::DeviceRuntime::get(device).fusion_stats();
}
void wait_for_compiles(Device device) {
  if (jit::KernelCache* cache = stream::DeviceRuntime::get(device).kernel_cache())
    cache->wait_idle();
}

}  // namespace streamfuse
