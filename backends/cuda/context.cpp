#include "backends/cuda/context.h"

#include "streamfuse/error.h"

namespace streamfuse::backends::cuda {

std::shared_ptr<DeviceContext> DeviceContext::open(int ordinal) {
  DeviceProperties props = cuda::properties(ordinal);  // DeviceError: no driver, bad ordinal
  const Driver& d = Driver::require("use cuda:" + std::to_string(ordinal));
  CUdevice device = 0;
  d.check(d.device_get(&device, ordinal), "cuDeviceGet");
  CUcontext context = nullptr;
  d.check(d.device_primary_ctx_retain(&context, device),
          "retaining the primary context of cuda:" + std::to_string(ordinal));
  return std::shared_ptr<DeviceContext>(
      new DeviceContext(d, ordinal, device, context, std::move(props)));
}

DeviceContext::DeviceContext(const Driver& driver, int ordinal, CUdevice device, CUcontext context,
                             DeviceProperties properties)
    : driver_(driver),
      ordinal_(ordinal),
      device_(device),
      context_(context),
      properties_(std::move(properties)) {}

DeviceContext::~DeviceContext() {
  // At process exit the driver may already be shutting down: nothing to report then.
  driver_.device_primary_ctx_release(device_);
}

void DeviceContext::make_current() const {
  driver_.check(driver_.ctx_set_current(context_), "making the context of " + name() + " current");
}

}  // namespace streamfuse::backends::cuda
