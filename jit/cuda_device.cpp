// The CUDA device factory (built with the CUDA backend): the GPU's backend, kernels built by NVRTC
// and persisted under the toolchain's fingerprint (NVRTC's version, the architecture, the
// options, so a process loads only what it could build), the CUDA launcher, and the backend's
// library kernels generated through the same cache.
#include "backends/cuda/cuda_backend.h"
#include "jit/cuda_launcher.h"
#include "jit/cuda_op_kernels.h"
#include "jit/cuda_toolchain.h"
#include "jit/device_factory.h"
#include "jit/kernel_files.h"

namespace streamfuse::jit {
namespace {

class CudaDeviceFactory final : public DeviceFactory {
 public:
  DeviceParts make(Device device, const std::shared_ptr<cache::CacheDir>& dir) const override {
    DeviceParts parts;
    auto gpu = std::make_unique<backends::cuda::CudaBackend>(device.index);  // DeviceError
    auto toolchain = std::make_unique<CudaToolchain>(gpu->context());
    auto files = std::make_unique<KernelFiles>(dir, toolchain->fingerprint());
    KernelCacheOptions options;
    options.mode = JitMode::kCompile;
    options.store = files.get();
    parts.kernel_cache = std::make_unique<KernelCache>(std::move(toolchain), options);
    backends::cuda::CudaBackend* g = gpu.get();
    std::function<CUstream()> stream_of = [g] { return g->streams().current(); };
    auto launcher = std::make_unique<CudaLauncher>(gpu->context(), *parts.kernel_cache, stream_of);
    gpu->set_kernels(
        std::make_unique<CudaOpKernels>(gpu->context(), *launcher, stream_of, files.get()));
    parts.launcher = std::move(launcher);
    parts.kernel_files = std::move(files);
    parts.backend = std::move(gpu);
    return parts;
  }
};

const CudaDeviceFactory kFactory;
[[maybe_unused]] const bool kRegistered =
    (register_device_factory(DeviceType::kCuda, &kFactory), true);

}  // namespace
}  // namespace streamfuse::jit
