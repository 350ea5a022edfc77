// Modules of the emulated GPU: the shared objects the emulated NVRTC builds (its "cubin" and
// "PTX"), loaded with dlopen, and the kernels in them (emulated_device.h's sf_emu_kernel).
#pragma once

#include <cuda.h>

#include <memory>

#include "tests/backends/cuda/emulator/emulated_device.h"

namespace streamfuse::backends::cuda::emulator {

// cuModuleLoadDataEx: `image` must be an ELF shared object of this machine built for this ABI
// (else CUDA_ERROR_INVALID_IMAGE). It is written to a temporary file, dlopened and the file
// deleted.
CUresult load_module(CUmodule* module, const void* image);
// cuModuleUnload. Launches already queued keep the code loaded until they ran.
CUresult unload_module(CUmodule module);
// cuModuleGetFunction: CUDA_ERROR_NOT_FOUND unless the module has an extern "C" kernel `name`.
CUresult get_function(CUfunction* function, CUmodule module, const char* name);

// A kernel and what keeps its code loaded.
struct KernelRef {
  const sf_emu_kernel* kernel = nullptr;
  std::shared_ptr<const void> module;
};
// The kernel behind a CUfunction; kernel is null for a handle no loaded module gave out.
KernelRef find_kernel(CUfunction function);

}  // namespace streamfuse::backends::cuda::emulator
