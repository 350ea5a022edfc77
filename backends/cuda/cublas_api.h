// cuBLAS, loaded at run time: a table of the entry points the CUDA backend's matrix products call.
// Loading it on first use, instead of linking it, keeps the library loadable where cuBLAS is not
// installed: without it only products of float dtypes on a GPU are unavailable.
//
// Each pointer has the type <cublas_api.h> declares for its name, so a Toolkit that changes a
// signature fails to compile here instead of crashing at run time. Call them as
// `cublas.gemm_ex(handle, ...)`, wrapped in check() where a failure is an error.
//
// The library tried: $STREAMFUSE_CUBLAS when set (a path or a soname; tests point it at a stand-in
// that computes on the host), else libcublas.so.<major of the cuBLAS headers built against>, then
// libcublas.so.
#pragma once

#include <cublas_v2.h>

#include <string>
#include <string_view>

namespace streamfuse::backends::cuda {

struct Cublas {
  // cuBLAS, loaded once, on the first call from any thread; nullptr when it cannot be (why:
  // unavailable_reason()). Loading creates no handle and needs no GPU.
  static const Cublas* get();
  // Why get() is nullptr: no library found (each name tried, with the loader's error), or one
  // lacking an entry point, each with what to do about it; empty when it is not.
  static const std::string& unavailable_reason();
  // get(), or a DeviceError "cuda: cannot <what>: <unavailable_reason()>".
  static const Cublas& require(const std::string& what);

  // Throws Error "<what> failed: CUBLAS_STATUS_X (<description>)" unless `status` is
  // CUBLAS_STATUS_SUCCESS.
  void check(cublasStatus_t status, std::string_view what) const;
  // "CUBLAS_STATUS_NOT_SUPPORTED (the requested functionality is not supported)"; "cublasStatus_t
  // 12345" when the library cannot name it.
  std::string describe(cublasStatus_t status) const;

  std::string library;  // the name or path it was loaded from

  decltype(&cublasCreate_v2) create;
  decltype(&cublasDestroy_v2) destroy;
  decltype(&cublasSetStream_v2) set_stream;
  decltype(&cublasSetMathMode) set_math_mode;
  // The 64-bit integer variants (cuBLAS 12.0+): operand strides may exceed 2^31 elements, which
  // the int leading dimensions of cublasGemmEx could not express.
  decltype(&cublasGemmEx_64) gemm_ex;
  decltype(&cublasGemmStridedBatchedEx_64) gemm_strided_batched_ex;
  // Optional (cuBLAS 11.4.2+): nullptr when the library lacks them; describe() then gives the
  // number.
  decltype(&cublasGetStatusName) get_status_name;
  decltype(&cublasGetStatusString) get_status_string;
};

}  // namespace streamfuse::backends::cuda
