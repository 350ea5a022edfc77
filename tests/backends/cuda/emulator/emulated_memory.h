// Device and pinned host memory of the emulated GPU. Device memory is host memory: a
// CUdeviceptr is the address of a 256-byte aligned host block, so kernels emulated on the host
// dereference device pointers directly. The device's capacity (SF_EMU_MEMORY_BYTES) is enforced,
// so out-of-memory handling can be tested.
#pragma once

#include <cuda.h>

#include <cstddef>

namespace streamfuse::backends::cuda::emulator {

// cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY when the device's capacity would be exceeded,
// CUDA_ERROR_INVALID_VALUE for 0 bytes. New memory is filled with 0xff bytes (NaN as floats),
// so a kernel reading memory nothing wrote sees garbage, as on a GPU, not zeros.
CUresult allocate_device(CUdeviceptr* p, std::size_t bytes);
// cuMemFree: waits for the work of every stream first (as the driver does); then
// CUDA_ERROR_INVALID_VALUE unless `p` is an allocation's start.
CUresult free_device(CUdeviceptr p);
// Whether [p, p + bytes) lies inside one device allocation, as large as it was asked for (always
// for 0 bytes).
bool is_device_range(CUdeviceptr p, std::size_t bytes);
void device_memory_info(std::size_t* free, std::size_t* total);
// Frees every device allocation (the primary context's reset).
void free_all_device_memory();

// cuMemAllocHost / cuMemFreeHost: plain aligned host memory; CUDA_ERROR_INVALID_VALUE when
// freeing what cuMemAllocHost did not return.
CUresult allocate_host(void** p, std::size_t bytes);
CUresult free_host(void* p);

}  // namespace streamfuse::backends::cuda::emulator
