// Per-device services of the API (synchronize, statistics, configuration), through the devices'
// runtimes.
#include "backends/cpu/isa.h"
#include "jit/kernel_cache.h"
#include "runtime/device_runtime.h"
#include "runtime/runtime.h"

namespace streamfuse::runtime {

void synchronize(Device device) { DeviceRuntime::get(device).synchronize(); }

void start(Device device) { static_cast<void>(DeviceRuntime::get(device)); }

MemoryStats memory_stats(Device device) {
  return DeviceRuntime::get(device).backend().memory_stats();
}

void reset_peak_memory_stats(Device device) {
  DeviceRuntime::get(device).backend().reset_peak_memory_stats();
}

void empty_cache(Device device) { DeviceRuntime::get(device).backend().empty_cache(); }

FusionStats fusion_stats(Device device) { return DeviceRuntime::get(device).fusion_stats(); }

void wait_for_compiles(Device device) {
  if (jit::KernelCache* cache = DeviceRuntime::get(device).kernel_cache()) cache->wait_idle();
}

void apply_config(const Config& config) {
  for (DeviceRuntime* rt : DeviceRuntime::all()) rt->apply(config);
}

void check_environment() { backends::cpu::isa_cap_from_env(); }

}  // namespace streamfuse::runtime
