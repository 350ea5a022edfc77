// The emulated device and its primary context: the configuration cuInit reads from the
// environment, the primary context's reference count, and each thread's current context.
//
//   SF_EMU_ARCH            compute capability as major * 10 + minor (default 90, sm_90)
//   SF_EMU_MEMORY_BYTES    device memory, enforced by cuMemAlloc (default 1 GiB)
//   CUDA_VISIBLE_DEVICES   empty or "-1": no device, as the real driver sees it
#pragma once

#include <cuda.h>

#include <cstddef>

namespace streamfuse::backends::cuda::emulator {

struct DeviceConfig {
  int arch = 90;
  std::size_t memory_bytes = std::size_t{1} << 30;
  int multiprocessors = 4;
};

// cuInit: reads the configuration once. CUDA_ERROR_NO_DEVICE when CUDA_VISIBLE_DEVICES hides the
// device, CUDA_ERROR_INVALID_VALUE (with a message on stderr) for a malformed variable.
CUresult initialize();
// CUDA_SUCCESS after a successful cuInit, else CUDA_ERROR_NOT_INITIALIZED.
CUresult check_initialized();
// check_initialized(), then CUDA_ERROR_INVALID_DEVICE unless `device` is device 0.
CUresult check_device(CUdevice device);
const DeviceConfig& config();

// cuDevicePrimaryCtxRetain / Release. When the last reference goes, the context is reset as the
// driver resets it: its streams finish their work and its device memory is freed; calls that
// need a current context then fail with CUDA_ERROR_INVALID_CONTEXT until it is retained again.
CUresult retain_primary(CUcontext* context);
CUresult release_primary();

CUresult set_current(CUcontext context);
CUcontext current();
// CUDA_SUCCESS when the calling thread has a current, live context (what cuMemAlloc,
// cuStreamCreate, cuModuleLoadDataEx... need); CUDA_ERROR_NOT_INITIALIZED before cuInit,
// CUDA_ERROR_INVALID_CONTEXT otherwise.
CUresult check_current();

}  // namespace streamfuse::backends::cuda::emulator
