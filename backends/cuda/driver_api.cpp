#include "backends/cuda/driver_api.h"

#include <cudaTypedefs.h>  // PFN_<name>_v<version>: the ABI variants the loader asks for
#include <dlfcn.h>

#include <memory>
#include <type_traits>

#include "core/environment.h"
#include "streamfuse/error.h"

namespace streamfuse::backends::cuda {

namespace {

// Kernels from this Toolkit's NVRTC (cubins, PTX) load on drivers of its major version or newer.
constexpr int kRequiredVersion = CUDA_VERSION / 1000 * 1000;

std::string version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

// Finds entry points in one library: through cuGetProcAddress when it has one, else (or when it
// lacks the variant) through dlsym of the variant's exported name. A bare name is not enough
// either way: dlsym("cuMemAlloc") finds the CUDA 2.0 variant with 32-bit sizes, and
// cuGetProcAddress(name, CUDA_VERSION) the newest variant, which for cuCtxSynchronize in CUDA 13
// takes a context argument that <cuda.h>'s cuCtxSynchronize does not.
class Resolver {
 public:
  explicit Resolver(void* library) : library_(library) {
    get_proc_address_ =
        reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(library, "cuGetProcAddress_v2"));
  }

  // Sets `fn` to entry point `name` in the variant introduced in CUDA `version`, exported as
  // `symbol` (`name` when null); to null when the library has neither, and missing() names the
  // first such. Pfn is cudaTypedefs.h's type of that variant: the static_assert fails when
  // <cuda.h> declares `name` with another signature, i.e. when a new Toolkit moved `name` to a
  // variant this table does not ask for.
  template <class Pfn, class Fn>
  void resolve(Fn& fn, const char* name, int version, const char* symbol = nullptr) {
    static_assert(std::is_same_v<Pfn, Fn>, "<cuda.h> declares another variant: update the table");
    void* p = nullptr;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    // Legacy-stream variants, as dlsym finds them: the backend never uses the default stream.
    if (get_proc_address_ &&
        (get_proc_address_(name, &p, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status) !=
             CUDA_SUCCESS ||
         status != CU_GET_PROC_ADDRESS_SUCCESS))
      p = nullptr;
    if (!symbol) symbol = name;
    if (!p) p = dlsym(library_, symbol);
    if (!p && missing_.empty()) missing_ = symbol;
    fn = reinterpret_cast<Fn>(p);
  }

  const std::string& missing() const { return missing_; }

 private:
  void* library_;
  PFN_cuGetProcAddress_v12000 get_proc_address_;
  std::string missing_;
};

// Every entry point but driver_get_version, as <cuda.h> declares it: the versions and symbols
// are those of the cudaTypedefs.h PFN_<name>_v<version> that matches the declaration. False
// when one is missing.
bool resolve_all(Resolver& r, Driver& d) {
  r.resolve<PFN_cuInit_v2000>(d.init, "cuInit", 2000);
  r.resolve<PFN_cuGetErrorName_v6000>(d.get_error_name, "cuGetErrorName", 6000);
  r.resolve<PFN_cuGetErrorString_v6000>(d.get_error_string, "cuGetErrorString", 6000);
  r.resolve<PFN_cuDeviceGetCount_v2000>(d.device_get_count, "cuDeviceGetCount", 2000);
  r.resolve<PFN_cuDeviceGet_v2000>(d.device_get, "cuDeviceGet", 2000);
  r.resolve<PFN_cuDeviceGetName_v2000>(d.device_get_name, "cuDeviceGetName", 2000);
  r.resolve<PFN_cuDeviceGetAttribute_v2000>(d.device_get_attribute, "cuDeviceGetAttribute", 2000);
  r.resolve<PFN_cuDeviceTotalMem_v3020>(d.device_total_mem, "cuDeviceTotalMem", 3020,
                                        "cuDeviceTotalMem_v2");
  r.resolve<PFN_cuDevicePrimaryCtxRetain_v7000>(d.device_primary_ctx_retain,
                                                "cuDevicePrimaryCtxRetain", 7000);
  r.resolve<PFN_cuDevicePrimaryCtxRelease_v11000>(d.device_primary_ctx_release,
                                                  "cuDevicePrimaryCtxRelease", 11000,
                                                  "cuDevicePrimaryCtxRelease_v2");
  r.resolve<PFN_cuCtxSetCurrent_v4000>(d.ctx_set_current, "cuCtxSetCurrent", 4000);
  r.resolve<PFN_cuCtxGetCurrent_v4000>(d.ctx_get_current, "cuCtxGetCurrent", 4000);
  // Not 13000: CUDA 13 added a cuCtxSynchronize that takes a context, which <cuda.h> does not
  // declare under this name.
  r.resolve<PFN_cuCtxSynchronize_v2000>(d.ctx_synchronize, "cuCtxSynchronize", 2000);
  r.resolve<PFN_cuStreamCreate_v2000>(d.stream_create, "cuStreamCreate", 2000);
  r.resolve<PFN_cuStreamDestroy_v4000>(d.stream_destroy, "cuStreamDestroy", 4000,
                                       "cuStreamDestroy_v2");
  r.resolve<PFN_cuStreamSynchronize_v2000>(d.stream_synchronize, "cuStreamSynchronize", 2000);
  r.resolve<PFN_cuStreamWaitEvent_v3020>(d.stream_wait_event, "cuStreamWaitEvent", 3020);
  r.resolve<PFN_cuStreamQuery_v2000>(d.stream_query, "cuStreamQuery", 2000);
  r.resolve<PFN_cuEventCreate_v2000>(d.event_create, "cuEventCreate", 2000);
  r.resolve<PFN_cuEventRecord_v2000>(d.event_record, "cuEventRecord", 2000);
  r.resolve<PFN_cuEventSynchronize_v2000>(d.event_synchronize, "cuEventSynchronize", 2000);
  r.resolve<PFN_cuEventQuery_v2000>(d.event_query, "cuEventQuery", 2000);
  r.resolve<PFN_cuEventElapsedTime_v12080>(d.event_elapsed_time, "cuEventElapsedTime", 12080,
                                           "cuEventElapsedTime_v2");
  r.resolve<PFN_cuEventDestroy_v4000>(d.event_destroy, "cuEventDestroy", 4000, "cuEventDestroy_v2");
  r.resolve<PFN_cuMemAlloc_v3020>(d.mem_alloc, "cuMemAlloc", 3020, "cuMemAlloc_v2");
  r.resolve<PFN_cuMemFree_v3020>(d.mem_free, "cuMemFree", 3020, "cuMemFree_v2");
  r.resolve<PFN_cuMemAllocHost_v3020>(d.mem_alloc_host, "cuMemAllocHost", 3020,
                                      "cuMemAllocHost_v2");
  r.resolve<PFN_cuMemFreeHost_v2000>(d.mem_free_host, "cuMemFreeHost", 2000);
  r.resolve<PFN_cuMemGetInfo_v3020>(d.mem_get_info, "cuMemGetInfo", 3020, "cuMemGetInfo_v2");
  r.resolve<PFN_cuMemcpyHtoDAsync_v3020>(d.memcpy_htod_async, "cuMemcpyHtoDAsync", 3020,
                                         "cuMemcpyHtoDAsync_v2");
  r.resolve<PFN_cuMemcpyDtoHAsync_v3020>(d.memcpy_dtoh_async, "cuMemcpyDtoHAsync", 3020,
                                         "cuMemcpyDtoHAsync_v2");
  r.resolve<PFN_cuMemcpyDtoDAsync_v3020>(d.memcpy_dtod_async, "cuMemcpyDtoDAsync", 3020,
                                         "cuMemcpyDtoDAsync_v2");
  r.resolve<PFN_cuMemsetD8Async_v3020>(d.memset_d8_async, "cuMemsetD8Async", 3020);
  r.resolve<PFN_cuModuleLoadDataEx_v2010>(d.module_load_data_ex, "cuModuleLoadDataEx", 2010);
  r.resolve<PFN_cuModuleUnload_v2000>(d.module_unload, "cuModuleUnload", 2000);
  r.resolve<PFN_cuModuleGetFunction_v2000>(d.module_get_function, "cuModuleGetFunction", 2000);
  r.resolve<PFN_cuFuncGetAttribute_v2020>(d.func_get_attribute, "cuFuncGetAttribute", 2020);
  r.resolve<PFN_cuLaunchKernel_v4000>(d.launch_kernel, "cuLaunchKernel", 4000);
  r.resolve<PFN_cuOccupancyMaxPotentialBlockSize_v6050>(d.occupancy_max_potential_block_size,
                                                        "cuOccupancyMaxPotentialBlockSize", 6050);
  return r.missing().empty();
}

struct Loaded {
  std::unique_ptr<Driver> driver;
  std::string reason;
};

// Opens the library, checks its version, resolves every entry point and runs cuInit. The handle
// is never closed: it is opened at most once per process, and buffers and modules may still be
// freed through it while the process exits.
Loaded load() {
  const std::string library = core::env_text("STREAMFUSE_CUDA_DRIVER").value_or("libcuda.so.1");
  void* lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* error = dlerror();
    return {nullptr, library + " could not be loaded (" + (error ? error : "no reason given") +
                         "); install the NVIDIA driver, which provides it, or use Device::cpu()"};
  }
  const std::string not_a_driver =
      ": it is not a CUDA driver, or a damaged one; reinstall the NVIDIA driver";
  auto d = std::make_unique<Driver>();
  // cuDriverGetVersion has had one ABI since CUDA 2.2, and the version it returns says whether
  // the variants the table asks for exist.
  d->driver_get_version =
      reinterpret_cast<decltype(d->driver_get_version)>(dlsym(lib, "cuDriverGetVersion"));
  if (!d->driver_get_version)
    return {nullptr, library + " lacks the entry point cuDriverGetVersion" + not_a_driver};
  if (d->driver_get_version(&d->version) != CUDA_SUCCESS)
    return {nullptr, library + " does not report its CUDA version" + not_a_driver};
  if (d->version < kRequiredVersion)
    return {nullptr, library + " supports CUDA " + version_text(d->version) + ", older than the " +
                         version_text(kRequiredVersion) +
                         " this build's kernels need; update the NVIDIA driver"};
  Resolver resolver(lib);
  if (!resolve_all(resolver, *d))
    return {nullptr, library + " lacks the entry point " + resolver.missing() + not_a_driver};
  if (const CUresult r = d->init(0); r != CUDA_SUCCESS)
    return {nullptr, "cuInit failed in " + library + ": " + d->describe(r) +
                         "; check that nvidia-smi lists a GPU and that CUDA_VISIBLE_DEVICES does "
                         "not hide it"};
  return {std::move(d), {}};
}

const Loaded& loaded() {
  static const Loaded* l = new Loaded(load());  // never destroyed: see load()
  return *l;
}

}  // namespace

const Driver* Driver::get() { return loaded().driver.get(); }

const std::string& Driver::unavailable_reason() { return loaded().reason; }

const Driver& Driver::require(const std::string& what) {
  if (const Driver* d = get()) return *d;
  throw DeviceError("cuda: cannot " + what + ": " + unavailable_reason());
}

void Driver::check(CUresult result, std::string_view what) const {
  if (result != CUDA_SUCCESS)
    throw Error("cuda: " + std::string(what) + " failed: " + describe(result));
}

std::string Driver::describe(CUresult result) const {
  const char* name = nullptr;
  if (get_error_name(result, &name) != CUDA_SUCCESS || !name)
    return "CUresult " + std::to_string(static_cast<int>(result));
  const char* text = nullptr;
  if (get_error_string(result, &text) != CUDA_SUCCESS || !text) return name;
  return std::string(name) + " (" + text + ")";
}

}  // namespace streamfuse::backends::cuda
