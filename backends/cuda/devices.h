// The CUDA devices this machine has, as the driver enumerates them (after CUDA_VISIBLE_DEVICES).
#pragma once

#include <cstddef>
#include <string>

namespace streamfuse::backends::cuda {

struct DeviceProperties {
  std::string name;  // "NVIDIA H100 80GB HBM3"
  int major = 0;     // compute capability major.minor
  int minor = 0;
  std::size_t total_memory = 0;  // bytes
  int multiprocessors = 0;
  int max_threads_per_block = 0;
};

// How many CUDA devices there are; 0 without a usable driver. Never throws.
int device_count();
// The properties of device `ordinal`. Throws DeviceError naming "cuda:<ordinal>" when there is no
// usable driver or no such device (saying how many there are), Error when the driver fails.
DeviceProperties properties(int ordinal);
// The architecture NVRTC compiles for: "sm_90" for compute capability 9.0.
std::string arch_name(const DeviceProperties& p);

}  // namespace streamfuse::backends::cuda
