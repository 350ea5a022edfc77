#include "backends/cuda/devices.h"

#include "backends/cuda/driver_api.h"
#include "streamfuse/error.h"

namespace streamfuse::backends::cuda {

int device_count() {
  const Driver* d = Driver::get();
  int count = 0;
  if (!d || d->device_get_count(&count) != CUDA_SUCCESS) return 0;
  return count;
}

DeviceProperties properties(int ordinal) {
  const std::string device = "cuda:" + std::to_string(ordinal);
  const Driver& d = Driver::require("use " + device);
  int count = 0;
  d.check(d.device_get_count(&count), "cuDeviceGetCount");
  if (ordinal < 0 || ordinal >= count)
    throw DeviceError("cuda: there is no " + device + ": this machine has " +
                      std::to_string(count) + " CUDA device" + (count == 1 ? "" : "s") +
                      (count > 0 ? " (cuda:0 to cuda:" + std::to_string(count - 1) + ")" : "") +
                      "; check CUDA_VISIBLE_DEVICES");
  CUdevice dev = 0;
  d.check(d.device_get(&dev, ordinal), "cuDeviceGet for " + device);

  const auto attribute = [&](CUdevice_attribute a, const char* what) {
    int value = 0;
    d.check(d.device_get_attribute(&value, a, dev),
            "cuDeviceGetAttribute(" + std::string(what) + ") for " + device);
    return value;
  };
  DeviceProperties p;
  char name[256] = {};
  d.check(d.device_get_name(name, sizeof(name) - 1, dev), "cuDeviceGetName for " + device);
  p.name = name;
  p.major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "compute capability major");
  p.minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "compute capability minor");
  p.multiprocessors = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "multiprocessor count");
  p.max_threads_per_block =
      attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "max threads per block");
  d.check(d.device_total_mem(&p.total_memory, dev), "cuDeviceTotalMem for " + device);
  return p;
}

std::string arch_name(const DeviceProperties& p) {
  return "sm_" + std::to_string(p.major * 10 + p.minor);
}

}  // namespace streamfuse::backends::cuda
