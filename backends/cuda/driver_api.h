// The CUDA driver API, loaded at run time: a table of the entry points the CUDA backend calls.
// Loading libcuda.so.1 on first use of a CUDA device, instead of linking it, keeps one build
// loadable on machines without an NVIDIA driver, where only the CPU runs.
//
// Each pointer has the type <cuda.h> declares for its name (decltype(&cuMemAlloc) is the
// cuMemAlloc_v2 ABI), and the loader asks the driver for exactly that ABI variant. Call them as
// `driver.mem_alloc(&ptr, bytes)`, wrapped in check() where a failure is an error.
//
// The library tried: $STREAMFUSE_CUDA_DRIVER when set (a path or a soname; tests point it at
// libraries that are not a driver), else libcuda.so.1.
#pragma once

#include <cuda.h>

#include <string>
#include <string_view>

namespace streamfuse::backends::cuda {

struct Driver {
  // The driver, loaded and initialized (cuInit) once, on the first call from any thread;
  // nullptr when it cannot be (why: unavailable_reason()).
  static const Driver* get();
  // Why get() is nullptr: the library not found, an entry point it lacks, cuInit failing, or a
  // driver older than this build needs, each with what to do about it; empty when it is not.
  static const std::string& unavailable_reason();
  // get(), or a DeviceError "cuda: cannot <what>: <unavailable_reason()>".
  static const Driver& require(const std::string& what);

  // Throws Error "cuda: <what> failed: CUDA_ERROR_X (<description>)" unless `result` is
  // CUDA_SUCCESS.
  void check(CUresult result, std::string_view what) const;
  // "CUDA_ERROR_OUT_OF_MEMORY (out of memory)"; "CUresult 12345" for a code the driver does not
  // know.
  std::string describe(CUresult result) const;

  int version = 0;  // the CUDA version the driver supports, 1000 * major + 10 * minor

  decltype(&cuInit) init;
  decltype(&cuDriverGetVersion) driver_get_version;
  decltype(&cuGetErrorName) get_error_name;
  decltype(&cuGetErrorString) get_error_string;

  decltype(&cuDeviceGetCount) device_get_count;
  decltype(&cuDeviceGet) device_get;
  decltype(&cuDeviceGetName) device_get_name;
  decltype(&cuDeviceGetAttribute) device_get_attribute;
  decltype(&cuDeviceTotalMem) device_total_mem;

  decltype(&cuDevicePrimaryCtxRetain) device_primary_ctx_retain;
  decltype(&cuDevicePrimaryCtxRelease) device_primary_ctx_release;
  decltype(&cuCtxSetCurrent) ctx_set_current;
  decltype(&cuCtxGetCurrent) ctx_get_current;
  decltype(&cuCtxSynchronize) ctx_synchronize;

  decltype(&cuStreamCreate) stream_create;
  decltype(&cuStreamDestroy) stream_destroy;
  decltype(&cuStreamSynchronize) stream_synchronize;
  decltype(&cuStreamWaitEvent) stream_wait_event;
  decltype(&cuStreamQuery) stream_query;

  decltype(&cuEventCreate) event_create;
  decltype(&cuEventRecord) event_record;
  decltype(&cuEventSynchronize) event_synchronize;
  decltype(&cuEventQuery) event_query;
  decltype(&cuEventElapsedTime) event_elapsed_time;
  decltype(&cuEventDestroy) event_destroy;

  decltype(&cuMemAlloc) mem_alloc;
  decltype(&cuMemFree) mem_free;
  decltype(&cuMemAllocHost) mem_alloc_host;
  decltype(&cuMemFreeHost) mem_free_host;
  decltype(&cuMemGetInfo) mem_get_info;
  decltype(&cuMemcpyHtoDAsync) memcpy_htod_async;
  decltype(&cuMemcpyDtoHAsync) memcpy_dtoh_async;
  decltype(&cuMemcpyDtoDAsync) memcpy_dtod_async;
  decltype(&cuMemsetD8Async) memset_d8_async;

  decltype(&cuModuleLoadDataEx) module_load_data_ex;
  decltype(&cuModuleUnload) module_unload;
  decltype(&cuModuleGetFunction) module_get_function;
  decltype(&cuFuncGetAttribute) func_get_attribute;
  decltype(&cuLaunchKernel) launch_kernel;
  decltype(&cuOccupancyMaxPotentialBlockSize) occupancy_max_potential_block_size;
};

}  // namespace streamfuse::backends::cuda
