#include "tests/backends/cuda/emulator/emulated_attributes.h"

#include <algorithm>

#include "tests/backends/cuda/emulator/emulated_context.h"

namespace streamfuse::backends::cuda::emulator {

CUresult device_attribute(int* value, CUdevice_attribute attribute) {
  if (!value || attribute <= 0 || attribute >= CU_DEVICE_ATTRIBUTE_MAX)
    return CUDA_ERROR_INVALID_VALUE;
  const DeviceConfig& c = config();
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
      *value = 1024;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
      *value = 64;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
      *value = 0x7fffffff;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
      *value = 65535;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
      *value = 48 << 10;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
      *value = 228 << 10;
      break;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY:
      *value = 64 << 10;
      break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
      *value = 32;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH:
      *value = 0x7fffffff;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR:
      *value = 65536;
      break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
      *value = 1'500'000;  // kHz
      break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
      *value = 2'600'000;  // kHz
      break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
      *value = 5120;
      break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
      *value = 4 << 20;
      break;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT:
    case CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT:
      *value = 512;
      break;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT:
      *value = 32;
      break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *value = c.multiprocessors;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
      *value = 2048;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
      *value = 32;
      break;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:
      *value = 2;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *value = c.arch / 10;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *value = c.arch % 10;
      break;
    case CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO:
      *value = 2;
      break;
    // What the emulator does have: overlap of copies and kernels, concurrent kernels on
    // different streams, unified addressing, host memory mapping.
    case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP:
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
    case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED:
      *value = 1;
      break;
    default:
      *value = 0;  // PCI ids, textures, managed memory, pools, IPC, ...
      break;
  }
  return CUDA_SUCCESS;
}

CUresult function_attribute(int* value, CUfunction_attribute attribute, const sf_emu_kernel& k) {
  if (!value || attribute < 0 || attribute >= CU_FUNC_ATTRIBUTE_MAX)
    return CUDA_ERROR_INVALID_VALUE;
  switch (attribute) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *value = std::min(k.max_threads, 1024);
      break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS:
      *value = 32;
      break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
      *value = config().arch;
      break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      *value = 0;  // launches with dynamic shared memory are not supported
      break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      *value = -1;
      break;
    default:
      *value = 0;  // static shared, constant and local sizes are not measured
      break;
  }
  return CUDA_SUCCESS;
}

}  // namespace streamfuse::backends::cuda::emulator
