// Names and descriptions of CUresult codes, as cuGetErrorName and cuGetErrorString give them.
#pragma once

#include <cuda.h>

namespace streamfuse::backends::cuda::emulator {

// "CUDA_ERROR_OUT_OF_MEMORY"; nullptr for a code the table does not list.
const char* error_name(CUresult r);
// "out of memory"; nullptr for a code the table does not list.
const char* error_string(CUresult r);

}  // namespace streamfuse::backends::cuda::emulator
