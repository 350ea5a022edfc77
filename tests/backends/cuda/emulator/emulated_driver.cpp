// A stand-in for libcuda.so.1 that emulates one CUDA GPU on the CPU, so that the CUDA backend's
// real code (allocator, streams, events, copies, NVRTC-compiled kernels and their launches) runs
// in CI on machines without a GPU. Tests load it through $STREAMFUSE_CUDA_DRIVER, with the
// emulated NVRTC (emulated_nvrtc.cpp) through $STREAMFUSE_NVRTC.
//
// Each entry point has the ABI of the variant <cuda.h> declares under its name (the header's
// macros make `cuMemAlloc` here define cuMemAlloc_v2), exported under that variant's symbol and
// handed out by cuGetProcAddress (proc_address.cpp). Semantics live in the emulated_* files.
#include <cuda.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "tests/backends/cuda/emulator/emulated_attributes.h"
#include "tests/backends/cuda/emulator/emulated_context.h"
#include "tests/backends/cuda/emulator/emulated_errors.h"
#include "tests/backends/cuda/emulator/emulated_launch.h"
#include "tests/backends/cuda/emulator/emulated_memory.h"
#include "tests/backends/cuda/emulator/emulated_modules.h"
#include "tests/backends/cuda/emulator/emulated_streams.h"

namespace emu = streamfuse::backends::cuda::emulator;

namespace {

bool is_legacy(CUstream s) { return !s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD; }

// Work on the legacy stream needs a current context (it names no other); work on a stream of
// the context's own does not.
CUresult check_for(CUstream s) {
  return is_legacy(s) ? emu::check_current() : emu::check_initialized();
}

// A copy of `bytes` bytes on `stream`, once the device side of it has been checked.
CUresult copy(void* dst, const void* src, std::size_t bytes, CUstream stream) {
  if (const CUresult r = check_for(stream); r != CUDA_SUCCESS) return r;
  if (bytes == 0) return CUDA_SUCCESS;
  if (!dst || !src) return CUDA_ERROR_INVALID_VALUE;
  return emu::submit(stream, [=] { std::memmove(dst, src, bytes); });
}

void* pointer(CUdeviceptr p) { return reinterpret_cast<void*>(p); }

template <class T>
CUresult fill(CUdeviceptr dst, T value, std::size_t count, CUstream stream) {
  if (const CUresult r = check_for(stream); r != CUDA_SUCCESS) return r;
  if (dst % alignof(T) != 0 || !emu::is_device_range(dst, count * sizeof(T)))
    return CUDA_ERROR_INVALID_VALUE;
  return emu::submit(stream, [=] { std::fill_n(static_cast<T*>(pointer(dst)), count, value); });
}

}  // namespace

extern "C" {

CUresult cuDriverGetVersion(int* version) {
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  *version = CUDA_VERSION;
  return CUDA_SUCCESS;
}

CUresult cuInit(unsigned int flags) { return flags ? CUDA_ERROR_INVALID_VALUE : emu::initialize(); }

CUresult cuGetErrorName(CUresult error, const char** name) {
  if (!name) return CUDA_ERROR_INVALID_VALUE;
  *name = emu::error_name(error);
  return *name ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult error, const char** text) {
  if (!text) return CUDA_ERROR_INVALID_VALUE;
  *text = emu::error_string(error);
  return *text ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// ---- Device ---------------------------------------------------------------------------------

CUresult cuDeviceGetCount(int* count) {
  if (const CUresult r = emu::check_initialized(); r != CUDA_SUCCESS) return r;
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = 1;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (const CUresult r = emu::check_device(ordinal); r != CUDA_SUCCESS) return r;
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice device) {
  if (const CUresult r = emu::check_device(device); r != CUDA_SUCCESS) return r;
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  const std::size_t n = std::min(std::strlen(emu::kDeviceName), static_cast<std::size_t>(len - 1));
  std::memcpy(name, emu::kDeviceName, n);
  name[n] = '\0';
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice device) {
  if (const CUresult r = emu::check_device(device); r != CUDA_SUCCESS) return r;
  return emu::device_attribute(value, attribute);
}

CUresult cuDeviceTotalMem(size_t* bytes, CUdevice device) {
  if (const CUresult r = emu::check_device(device); r != CUDA_SUCCESS) return r;
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  *bytes = emu::config().memory_bytes;
  return CUDA_SUCCESS;
}

// ---- Context --------------------------------------------------------------------------------

CUresult cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device) {
  if (const CUresult r = emu::check_device(device); r != CUDA_SUCCESS) return r;
  return emu::retain_primary(context);
}

CUresult cuDevicePrimaryCtxRelease(CUdevice device) {
  if (const CUresult r = emu::check_device(device); r != CUDA_SUCCESS) return r;
  return emu::release_primary();
}

CUresult cuCtxSetCurrent(CUcontext context) { return emu::set_current(context); }

CUresult cuCtxGetCurrent(CUcontext* context) {
  if (const CUresult r = emu::check_initialized(); r != CUDA_SUCCESS) return r;
  if (!context) return CUDA_ERROR_INVALID_VALUE;
  *context = emu::current();
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice* device) {
  if (const CUresult r = emu::check_current(); r != CUDA_SUCCESS) return r;
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  *device = 0;
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize() {
  if (const CUresult r = emu::check_current(); r != CUDA_SUCCESS) return r;
  emu::synchronize_streams(false);
  return CUDA_SUCCESS;
}

// CUDA 13's variant, which names the context (null: the current one). <cuda.h> declares it
// under no name; cuGetProcAddress hands it out for versions from 13000.
CUresult cuCtxSynchronize_v2(CUcontext context) {
  if (context && context != emu::current()) {
    if (const CUresult r = emu::check_initialized(); r != CUDA_SUCCESS) return r;
    emu::synchronize_streams(false);  // the only context there is
    return CUDA_SUCCESS;
  }
  return cuCtxSynchronize();
}

// ---- Streams and events ---------------------------------------------------------------------

CUresult cuStreamCreate(CUstream* stream, unsigned int flags) {
  return emu::create_stream(stream, flags);
}
CUresult cuStreamDestroy(CUstream stream) { return emu::destroy_stream(stream); }
CUresult cuStreamSynchronize(CUstream stream) { return emu::synchronize_stream(stream); }
CUresult cuStreamQuery(CUstream stream) { return emu::query_stream(stream); }
CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return emu::wait_event(stream, event);
}

CUresult cuEventCreate(CUevent* event, unsigned int flags) {
  return emu::create_event(event, flags);
}
CUresult cuEventDestroy(CUevent event) { return emu::destroy_event(event); }
CUresult cuEventRecord(CUevent event, CUstream stream) { return emu::record_event(event, stream); }
CUresult cuEventSynchronize(CUevent event) { return emu::synchronize_event(event); }
CUresult cuEventQuery(CUevent event) { return emu::query_event(event); }
CUresult cuEventElapsedTime(float* ms, CUevent start, CUevent end) {
  return emu::elapsed_time(ms, start, end);
}

// ---- Memory ---------------------------------------------------------------------------------

CUresult cuMemAlloc(CUdeviceptr* p, size_t bytes) { return emu::allocate_device(p, bytes); }
CUresult cuMemFree(CUdeviceptr p) { return emu::free_device(p); }
CUresult cuMemAllocHost(void** p, size_t bytes) { return emu::allocate_host(p, bytes); }
CUresult cuMemFreeHost(void* p) { return emu::free_host(p); }

CUresult cuMemGetInfo(size_t* free, size_t* total) {
  if (const CUresult r = emu::check_current(); r != CUDA_SUCCESS) return r;
  if (!free || !total) return CUDA_ERROR_INVALID_VALUE;
  emu::device_memory_info(free, total);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t bytes, CUstream stream) {
  if (!emu::is_device_range(dst, bytes)) return CUDA_ERROR_INVALID_VALUE;
  return copy(pointer(dst), src, bytes, stream);
}

CUresult cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  if (!emu::is_device_range(src, bytes)) return CUDA_ERROR_INVALID_VALUE;
  return copy(dst, pointer(src), bytes, stream);
}

CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  if (!emu::is_device_range(dst, bytes) || !emu::is_device_range(src, bytes))
    return CUDA_ERROR_INVALID_VALUE;
  return copy(pointer(dst), pointer(src), bytes, stream);
}

// The synchronous copies and fills: on the legacy stream, which runs work on the caller.
CUresult cuMemcpyHtoD(CUdeviceptr dst, const void* src, size_t bytes) {
  return cuMemcpyHtoDAsync(dst, src, bytes, nullptr);
}
CUresult cuMemcpyDtoH(void* dst, CUdeviceptr src, size_t bytes) {
  return cuMemcpyDtoHAsync(dst, src, bytes, nullptr);
}
CUresult cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  return cuMemcpyDtoDAsync(dst, src, bytes, nullptr);
}

CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t count, CUstream stream) {
  return fill(dst, value, count, stream);
}
CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t count, CUstream stream) {
  return fill(dst, value, count, stream);
}
CUresult cuMemsetD8(CUdeviceptr dst, unsigned char value, size_t count) {
  return fill(dst, value, count, nullptr);
}
CUresult cuMemsetD32(CUdeviceptr dst, unsigned int value, size_t count) {
  return fill(dst, value, count, nullptr);
}

// ---- Modules and launches -------------------------------------------------------------------

CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int, CUjit_option*,
                            void**) {
  return emu::load_module(module, image);
}
CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  return emu::load_module(module, image);
}
CUresult cuModuleUnload(CUmodule module) { return emu::unload_module(module); }
CUresult cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name) {
  return emu::get_function(function, module, name);
}

CUresult cuFuncGetAttribute(int* value, CUfunction_attribute attribute, CUfunction function) {
  if (const CUresult r = emu::check_initialized(); r != CUDA_SUCCESS) return r;
  const emu::KernelRef k = emu::find_kernel(function);
  if (!k.kernel) return CUDA_ERROR_INVALID_HANDLE;
  return emu::function_attribute(value, attribute, *k.kernel);
}

CUresult cuOccupancyMaxPotentialBlockSize(int* min_grid, int* block, CUfunction function,
                                          CUoccupancyB2DSize, size_t, int block_limit) {
  if (const CUresult r = emu::check_current(); r != CUDA_SUCCESS) return r;
  if (!min_grid || !block) return CUDA_ERROR_INVALID_VALUE;
  const emu::KernelRef k = emu::find_kernel(function);
  if (!k.kernel) return CUDA_ERROR_INVALID_HANDLE;
  int size = std::min(256, k.kernel->max_threads);
  if (block_limit > 0) size = std::min(size, block_limit);
  *block = size;
  *min_grid = emu::config().multiprocessors * (2048 / size);
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction f, unsigned int grid_x, unsigned int grid_y, unsigned int grid_z,
                        unsigned int block_x, unsigned int block_y, unsigned int block_z,
                        unsigned int shared_bytes, CUstream stream, void** params, void** extra) {
  if (const CUresult r = check_for(stream); r != CUDA_SUCCESS) return r;
  const unsigned grid[3] = {grid_x, grid_y, grid_z};
  const unsigned block[3] = {block_x, block_y, block_z};
  std::shared_ptr<emu::Launch> launch;
  if (const CUresult r = emu::prepare_launch(launch, f, grid, block, shared_bytes, params, extra);
      r != CUDA_SUCCESS)
    return r;
  return emu::submit(stream, [launch] { emu::run_launch(*launch); });
}

}  // extern "C"
