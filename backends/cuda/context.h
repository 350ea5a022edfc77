// One CUDA device as the backend uses it: its primary context (retained while anything holds the
// DeviceContext), its properties, and a guard that makes the context current on the calling
// thread (the runtime calls in from any thread; cuCtxSetCurrent is a cheap thread-local store).
#pragma once

#include <cuda.h>

#include <memory>
#include <string>

#include "backends/cuda/devices.h"
#include "backends/cuda/driver_api.h"

namespace streamfuse::backends::cuda {

class DeviceContext {
 public:
  // Retains device `ordinal`'s primary context. Throws DeviceError without a driver or for a bad
  // ordinal (naming "cuda:<ordinal>"), Error when the driver fails.
  static std::shared_ptr<DeviceContext> open(int ordinal);
  ~DeviceContext();
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

  const Driver& driver() const { return driver_; }
  CUcontext context() const { return context_; }
  int ordinal() const { return ordinal_; }
  const DeviceProperties& properties() const { return properties_; }
  int arch() const { return properties_.major * 10 + properties_.minor; }  // 90 for sm_90
  std::string name() const { return "cuda:" + std::to_string(ordinal_); }
  // Makes the context current on this thread. Throws Error when the driver refuses.
  void make_current() const;

 private:
  DeviceContext(const Driver& driver, int ordinal, CUdevice device, CUcontext context,
                DeviceProperties properties);

  const Driver& driver_;
  int ordinal_;
  CUdevice device_;
  CUcontext context_;
  DeviceProperties properties_;
};

}  // namespace streamfuse::backends::cuda
