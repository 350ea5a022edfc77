// The CPU's device factory: the CPU backend, kernels compiled by the system compiler for this
// machine's ISA level and persisted under its fingerprint, and the CPU launcher (compiled kernels,
// the interpreter while they build or where no compiler is).
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/isa.h"
#include "jit/cpu_launcher.h"
#include "jit/device_factory.h"
#include "jit/kernel_files.h"
#include "jit/system_compiler.h"

namespace streamfuse::jit {
namespace {

class CpuDeviceFactory final : public DeviceFactory {
 public:
  DeviceParts make(Device, const std::shared_ptr<cache::CacheDir>& dir) const override {
    DeviceParts parts;
    parts.backend = backends::cpu::make_cpu_backend();
    KernelCacheOptions options;
    options.mode = JitMode::kCompile;  // the launcher decides per launch (config may change)
    options.fingerprint = kernel_fingerprint(backends::cpu::isa_level());
    parts.kernel_files = std::make_unique<KernelFiles>(dir, options.fingerprint);
    options.store = parts.kernel_files.get();
    // Kernels are built in the cache directory's scratch folder of this process, their files
    // removed once loaded; what persists goes through the KernelFiles.
    options.scratch = [dir] { return dir->scratch(); };
    parts.kernel_cache = std::make_unique<KernelCache>(std::string(), options);
    parts.launcher =
        std::make_unique<CpuLauncher>(backends::cpu::kernels(), parts.kernel_cache.get());
    return parts;
  }
};

const CpuDeviceFactory kFactory;
[[maybe_unused]] const bool kRegistered =
    (register_device_factory(DeviceType::kCpu, &kFactory), true);

}  // namespace
}  // namespace streamfuse::jit
