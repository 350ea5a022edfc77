// A stand-in for libcuda.so.1 that driver_api_test loads through STREAMFUSE_CUDA_DRIVER, to reach
// the reasons a real machine rarely shows: it reports the CUDA version in $SF_FAKE_CUDA_VERSION,
// hands out an entry point for every name through cuGetProcAddress, and fails cuInit with
// CUDA_ERROR_NO_DEVICE. Only the entry points defined here are ever called.
#include <cuda.h>

#include <cstdlib>
#include <cstring>

namespace {

[[noreturn]] void not_called() { std::abort(); }

}  // namespace

extern "C" {

CUresult cuDriverGetVersion(int* version) {
  const char* v = std::getenv("SF_FAKE_CUDA_VERSION");
  *version = v ? std::atoi(v) : 0;
  return CUDA_SUCCESS;
}

CUresult cuInit(unsigned int) { return CUDA_ERROR_NO_DEVICE; }

CUresult cuGetErrorName(CUresult error, const char** name) {
  *name = error == CUDA_ERROR_NO_DEVICE ? "CUDA_ERROR_NO_DEVICE" : nullptr;
  return *name ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult error, const char** text) {
  *text = error == CUDA_ERROR_NO_DEVICE ? "no CUDA-capable device is detected" : nullptr;
  return *text ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// <cuda.h> names this cuGetProcAddress_v2, the symbol the loader looks for.
CUresult cuGetProcAddress(const char* symbol, void** pfn, int, cuuint64_t,
                          CUdriverProcAddressQueryResult* status) {
  if (std::strcmp(symbol, "cuInit") == 0)
    *pfn = reinterpret_cast<void*>(&cuInit);
  else if (std::strcmp(symbol, "cuGetErrorName") == 0)
    *pfn = reinterpret_cast<void*>(&cuGetErrorName);
  else if (std::strcmp(symbol, "cuGetErrorString") == 0)
    *pfn = reinterpret_cast<void*>(&cuGetErrorString);
  else
    *pfn = reinterpret_cast<void*>(&not_called);
  if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

}  // extern "C"
