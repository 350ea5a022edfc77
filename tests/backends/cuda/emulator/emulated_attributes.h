// The attributes the emulated GPU reports for itself and for its kernels: those of a small
// data-centre GPU (4 multiprocessors, 1024 threads per block), with the compute capability and
// memory of the configuration (emulated_context.h).
#pragma once

#include <cuda.h>

#include "tests/backends/cuda/emulator/emulated_device.h"

namespace streamfuse::backends::cuda::emulator {

inline constexpr const char* kDeviceName = "streamfuse emulated GPU";

// cuDeviceGetAttribute for device 0: CUDA_ERROR_INVALID_VALUE for an attribute <cuda.h> does not
// list; 0 for a capability the emulator does not have (textures, managed memory, ...).
CUresult device_attribute(int* value, CUdevice_attribute attribute);
// cuFuncGetAttribute: CUDA_ERROR_INVALID_VALUE for an attribute <cuda.h> does not list.
CUresult function_attribute(int* value, CUfunction_attribute attribute, const sf_emu_kernel& k);

}  // namespace streamfuse::backends::cuda::emulator
