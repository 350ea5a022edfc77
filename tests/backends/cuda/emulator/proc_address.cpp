// cuGetProcAddress for the emulated driver: each entry point under the CUDA version that
// introduced its ABI variant, so that a caller asking for a version gets the variant it would
// get from the real driver, or nothing when it asks for one older than the emulator implements
// (the 32-bit cuMemAlloc of CUDA 2.0, say).
#include <cuda.h>

#include <cstring>

// Defined in emulated_driver.cpp; <cuda.h> does not declare it.
extern "C" CUresult cuCtxSynchronize_v2(CUcontext context);

namespace {

struct EntryPoint {
  const char* name;
  int version;  // the CUDA version that introduced this variant
  void* function;
};

template <class F>
void* fn(F* f) {
  return reinterpret_cast<void*>(f);
}

// The variants, as cudaTypedefs.h's PFN_<name>_v<version> names them; a name listed twice has
// two ABIs, the later one from its version on.
const EntryPoint kEntryPoints[] = {
    {"cuInit", 2000, fn(&cuInit)},
    {"cuDriverGetVersion", 2020, fn(&cuDriverGetVersion)},
    {"cuGetErrorName", 6000, fn(&cuGetErrorName)},
    {"cuGetErrorString", 6000, fn(&cuGetErrorString)},
    {"cuGetProcAddress", 12000, fn(&cuGetProcAddress)},
    {"cuDeviceGetCount", 2000, fn(&cuDeviceGetCount)},
    {"cuDeviceGet", 2000, fn(&cuDeviceGet)},
    {"cuDeviceGetName", 2000, fn(&cuDeviceGetName)},
    {"cuDeviceGetAttribute", 2000, fn(&cuDeviceGetAttribute)},
    {"cuDeviceTotalMem", 3020, fn(&cuDeviceTotalMem)},
    {"cuDevicePrimaryCtxRetain", 7000, fn(&cuDevicePrimaryCtxRetain)},
    {"cuDevicePrimaryCtxRelease", 11000, fn(&cuDevicePrimaryCtxRelease)},
    {"cuCtxSetCurrent", 4000, fn(&cuCtxSetCurrent)},
    {"cuCtxGetCurrent", 4000, fn(&cuCtxGetCurrent)},
    {"cuCtxGetDevice", 2000, fn(&cuCtxGetDevice)},
    {"cuCtxSynchronize", 2000, fn(&cuCtxSynchronize)},
    {"cuCtxSynchronize", 13000, fn(&cuCtxSynchronize_v2)},
    {"cuStreamCreate", 2000, fn(&cuStreamCreate)},
    {"cuStreamDestroy", 4000, fn(&cuStreamDestroy)},
    {"cuStreamSynchronize", 2000, fn(&cuStreamSynchronize)},
    {"cuStreamWaitEvent", 3020, fn(&cuStreamWaitEvent)},
    {"cuStreamQuery", 2000, fn(&cuStreamQuery)},
    {"cuEventCreate", 2000, fn(&cuEventCreate)},
    {"cuEventRecord", 2000, fn(&cuEventRecord)},
    {"cuEventSynchronize", 2000, fn(&cuEventSynchronize)},
    {"cuEventQuery", 2000, fn(&cuEventQuery)},
    // The 12.8 variant has the 2.0 one's signature (it returns errors the older one did not).
    {"cuEventElapsedTime", 2000, fn(&cuEventElapsedTime)},
    {"cuEventElapsedTime", 12080, fn(&cuEventElapsedTime)},
    {"cuEventDestroy", 4000, fn(&cuEventDestroy)},
    {"cuMemAlloc", 3020, fn(&cuMemAlloc)},
    {"cuMemFree", 3020, fn(&cuMemFree)},
    {"cuMemAllocHost", 3020, fn(&cuMemAllocHost)},
    {"cuMemFreeHost", 2000, fn(&cuMemFreeHost)},
    {"cuMemGetInfo", 3020, fn(&cuMemGetInfo)},
    {"cuMemcpyHtoDAsync", 3020, fn(&cuMemcpyHtoDAsync)},
    {"cuMemcpyDtoHAsync", 3020, fn(&cuMemcpyDtoHAsync)},
    {"cuMemcpyDtoDAsync", 3020, fn(&cuMemcpyDtoDAsync)},
    {"cuMemcpyHtoD", 3020, fn(&cuMemcpyHtoD)},
    {"cuMemcpyDtoH", 3020, fn(&cuMemcpyDtoH)},
    {"cuMemcpyDtoD", 3020, fn(&cuMemcpyDtoD)},
    {"cuMemsetD8Async", 3020, fn(&cuMemsetD8Async)},
    {"cuMemsetD32Async", 3020, fn(&cuMemsetD32Async)},
    {"cuMemsetD8", 3020, fn(&cuMemsetD8)},
    {"cuMemsetD32", 3020, fn(&cuMemsetD32)},
    {"cuModuleLoadData", 2000, fn(&cuModuleLoadData)},
    {"cuModuleLoadDataEx", 2010, fn(&cuModuleLoadDataEx)},
    {"cuModuleUnload", 2000, fn(&cuModuleUnload)},
    {"cuModuleGetFunction", 2000, fn(&cuModuleGetFunction)},
    {"cuFuncGetAttribute", 2020, fn(&cuFuncGetAttribute)},
    {"cuLaunchKernel", 4000, fn(&cuLaunchKernel)},
    {"cuOccupancyMaxPotentialBlockSize", 6050, fn(&cuOccupancyMaxPotentialBlockSize)},
};

}  // namespace

extern "C" {

// <cuda.h> names this cuGetProcAddress_v2. Per-thread default stream variants are the legacy
// ones: the emulator's default stream is the legacy stream either way.
CUresult cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t,
                          CUdriverProcAddressQueryResult* status) {
  if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  bool known = false;
  int best = 0;
  for (const EntryPoint& e : kEntryPoints) {
    if (std::strcmp(e.name, symbol) != 0) continue;
    known = true;
    if (e.version <= version && e.version >= best) {
      best = e.version;
      *pfn = e.function;
    }
  }
  if (status)
    *status = *pfn    ? CU_GET_PROC_ADDRESS_SUCCESS
              : known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                      : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

}  // extern "C"
