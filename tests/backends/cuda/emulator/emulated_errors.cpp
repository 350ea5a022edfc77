#include "tests/backends/cuda/emulator/emulated_errors.h"

namespace streamfuse::backends::cuda::emulator {
namespace {

struct ErrorText {
  CUresult code;
  const char* name;
  const char* text;
};

#define SF_EMU_ERROR(code, text) \
  { code, #code, text }

// Every code the emulator returns, and the common ones a caller may ask about; the texts are the
// real driver's.
constexpr ErrorText kErrors[] = {
    SF_EMU_ERROR(CUDA_SUCCESS, "no error"),
    SF_EMU_ERROR(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
    SF_EMU_ERROR(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
    SF_EMU_ERROR(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
    SF_EMU_ERROR(CUDA_ERROR_DEINITIALIZED, "driver shutting down"),
    SF_EMU_ERROR(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"),
    SF_EMU_ERROR(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
    SF_EMU_ERROR(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"),
    SF_EMU_ERROR(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
    SF_EMU_ERROR(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, "context already current"),
    SF_EMU_ERROR(CUDA_ERROR_MAP_FAILED, "mapping of buffer object failed"),
    SF_EMU_ERROR(CUDA_ERROR_NO_BINARY_FOR_GPU,
                 "no kernel image is available for execution on the device"),
    SF_EMU_ERROR(CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed"),
    SF_EMU_ERROR(CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
                 "the provided PTX was compiled with an unsupported toolchain."),
    SF_EMU_ERROR(CUDA_ERROR_JIT_COMPILER_NOT_FOUND, "PTX JIT compiler library not found"),
    SF_EMU_ERROR(CUDA_ERROR_INVALID_SOURCE, "device kernel image is invalid"),
    SF_EMU_ERROR(CUDA_ERROR_FILE_NOT_FOUND, "file not found"),
    SF_EMU_ERROR(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED, "shared object initialization failed"),
    SF_EMU_ERROR(CUDA_ERROR_OPERATING_SYSTEM,
                 "OS call failed or operation not supported on this OS"),
    SF_EMU_ERROR(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
    SF_EMU_ERROR(CUDA_ERROR_ILLEGAL_STATE,
                 "the operation cannot be performed in the present state"),
    SF_EMU_ERROR(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
    SF_EMU_ERROR(CUDA_ERROR_NOT_READY, "device not ready"),
    SF_EMU_ERROR(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"),
    SF_EMU_ERROR(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch"),
    SF_EMU_ERROR(CUDA_ERROR_LAUNCH_TIMEOUT, "the launch timed out and was terminated"),
    SF_EMU_ERROR(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed"),
    SF_EMU_ERROR(CUDA_ERROR_ILLEGAL_INSTRUCTION, "an illegal instruction was encountered"),
    SF_EMU_ERROR(CUDA_ERROR_MISALIGNED_ADDRESS, "misaligned address"),
    SF_EMU_ERROR(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"),
    SF_EMU_ERROR(CUDA_ERROR_NOT_PERMITTED, "operation not permitted"),
    SF_EMU_ERROR(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
    SF_EMU_ERROR(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH,
                 "system has unsupported display driver / cuda driver combination"),
    SF_EMU_ERROR(CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library"),
    SF_EMU_ERROR(CUDA_ERROR_UNKNOWN, "unknown error"),
};

#undef SF_EMU_ERROR

const ErrorText* find(CUresult r) {
  for (const ErrorText& e : kErrors)
    if (e.code == r) return &e;
  return nullptr;
}

}  // namespace

const char* error_name(CUresult r) {
  const ErrorText* e = find(r);
  return e ? e->name : nullptr;
}

const char* error_string(CUresult r) {
  const ErrorText* e = find(r);
  return e ? e->text : nullptr;
}

}  // namespace streamfuse::backends::cuda::emulator
