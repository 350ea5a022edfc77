// Devices are composed from factories: each backend's factory (jit/cpu_device.cpp,
// jit/cuda_device.cpp, built only where its backend is) registers itself for its device type and
// supplies the backend, the kernel toolchain and cache, the launcher and the backend's generated
// kernels. The device runtime asks the registry, so it names no backend. The factories live at
// the JIT's layer, the lowest that sees both a backend and the kernels' toolchains and launchers.
#pragma once

#include <memory>

#include "backends/backend.h"
#include "cache/cache_dir.h"
#include "jit/kernel_cache.h"
#include "jit/kernel_store.h"
#include "jit/launcher.h"
#include "streamfuse/device.h"

namespace streamfuse::jit {

// What a device is made of below its streams and plans. Members are destroyed bottom up: the
// launcher before the kernel cache, the cache before the kernel files it uses, all of them before
// the backend.
struct DeviceParts {
  std::unique_ptr<backends::Backend> backend;
  std::unique_ptr<KernelStore> kernel_files;  // null: kernels do not persist
  std::unique_ptr<KernelCache> kernel_cache;  // null: none
  std::unique_ptr<KernelLauncher> launcher;
};

class DeviceFactory {
 public:
  virtual ~DeviceFactory() = default;
  // The parts of `device` (of this factory's type), its kernels persisting in `dir`. Throws
  // DeviceError when this machine does not have it.
  virtual DeviceParts make(Device device, const std::shared_ptr<cache::CacheDir>& dir) const = 0;
};

// Registers `factory` (static storage) for `type`; from the factory's own file at static
// initialization.
void register_device_factory(DeviceType type, const DeviceFactory* factory);
// The factory of `type`; null when this build has none.
const DeviceFactory* device_factory(DeviceType type);

}  // namespace streamfuse::jit
