// A stand-in for libcublas that cuda_matmul_test loads through STREAMFUSE_CUBLAS, over the
// emulated driver, whose device addresses are host addresses. It implements the entry points
// CudaMatmul calls with the arithmetic cuBLAS documents (column-major matrices, OP_N / OP_T,
// leading dimensions, batch strides, alpha and beta, f32 / f16 / bf16 storage accumulated in
// f32) and rejects the arguments cuBLAS rejects, so a test comparing against its own reference
// checks CudaMatmul's mapping of a product onto cuBLAS arguments.
//
// A product runs on the calling thread, in stream order by blocking: it first synchronizes the
// handle's stream through the driver the process loaded ($STREAMFUSE_CUDA_DRIVER, else
// libcuda.so.1; the emulated driver offers no way to enqueue host work), then computes before it
// returns, so work queued before it is done and work queued after it comes after.
//
// For the tests, sf_fake_cublas_stat() reports counters and the last settings seen, and
// sf_fake_cublas_fail_next() makes the next product fail with a given status.
#include <cublas_v2.h>
#include <cuda.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "core/float16.h"

namespace core = streamfuse::core;

namespace {

using streamfuse::core::bf16_bits_to_float;
using streamfuse::core::float_to_bf16_bits;
using streamfuse::core::float_to_half_bits;
using streamfuse::core::half_bits_to_float;

struct FakeHandle {
  cudaStream_t stream = nullptr;
};

std::atomic<long long> live_handles{0}, gemm_calls{0}, batched_calls{0}, batched_matrices{0};
std::atomic<long long> last_math_mode{-1}, last_compute_type{-1};
std::atomic<int> fail_next{CUBLAS_STATUS_SUCCESS};

float load(const void* base, cudaDataType type, std::int64_t i) {
  switch (type) {
    case CUDA_R_16F:
      return core::half_bits_to_float(static_cast<const std::uint16_t*>(base)[i]);
    case CUDA_R_16BF:
      return core::bf16_bits_to_float(static_cast<const std::uint16_t*>(base)[i]);
    default:
      return static_cast<const float*>(base)[i];
  }
}

void store(void* base, cudaDataType type, std::int64_t i, float v) {
  switch (type) {
    case CUDA_R_16F:
      static_cast<std::uint16_t*>(base)[i] = core::float_to_half_bits(v);
      break;
    case CUDA_R_16BF:
      static_cast<std::uint16_t*>(base)[i] = core::float_to_bf16_bits(v);
      break;
    default:
      static_cast<float*>(base)[i] = v;
  }
}

std::int64_t max1(std::int64_t x) { return x > 1 ? x : 1; }

// cuBLAS's argument checks for C (m x n) = op(A) (m x k) * op(B) (k x n), column-major.
cublasStatus_t validate(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb,
                        std::int64_t m, std::int64_t n, std::int64_t k, const void* alpha,
                        cudaDataType at, std::int64_t lda, cudaDataType bt, std::int64_t ldb,
                        const void* beta, cudaDataType ct, std::int64_t ldc,
                        cublasComputeType_t compute, std::int64_t batch) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if ((ta != CUBLAS_OP_N && ta != CUBLAS_OP_T) || (tb != CUBLAS_OP_N && tb != CUBLAS_OP_T))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (m < 0 || n < 0 || k < 0 || batch < 0 || !alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
  if (lda < max1(ta == CUBLAS_OP_N ? m : k) || ldb < max1(tb == CUBLAS_OP_N ? k : n) ||
      ldc < max1(m))
    return CUBLAS_STATUS_INVALID_VALUE;
  // The real library has more combinations; these are the ones a product of one dtype uses.
  if (at != bt || bt != ct || (at != CUDA_R_32F && at != CUDA_R_16F && at != CUDA_R_16BF))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  // Only exact f32 accumulation: a TF32 or 16-bit compute type would change the results.
  if (compute != CUBLAS_COMPUTE_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
  return CUBLAS_STATUS_SUCCESS;
}

// C[p] = alpha * op(A[p]) op(B[p]) + beta * C[p] for p < batch, summing in f32 in order of k.
void compute(cublasOperation_t ta, cublasOperation_t tb, std::int64_t m, std::int64_t n,
             std::int64_t k, float alpha, const void* a, std::int64_t lda, long long stride_a,
             const void* b, std::int64_t ldb, long long stride_b, float beta, void* c,
             std::int64_t ldc, long long stride_c, std::int64_t batch, cudaDataType type) {
  for (std::int64_t p = 0; p < batch; ++p)
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i) {
        float sum = 0.0f;
        for (std::int64_t l = 0; l < k; ++l) {
          const std::int64_t ai = ta == CUBLAS_OP_N ? i + l * lda : l + i * lda;
          const std::int64_t bi = tb == CUBLAS_OP_N ? l + j * ldb : j + l * ldb;
          sum += load(a, type, p * stride_a + ai) * load(b, type, p * stride_b + bi);
        }
        const std::int64_t ci = p * stride_c + i + j * ldc;
        // beta == 0: C is not read, as in BLAS (it may hold NaN).
        store(c, type, ci, alpha * sum + (beta == 0.0f ? 0.0f : beta * load(c, type, ci)));
      }
}

// The loaded driver's cuStreamSynchronize, found through the library already loaded (its
// RTLD_LOCAL symbols are not global); nullptr when no driver is loaded.
decltype(&cuStreamSynchronize) stream_synchronize() {
  static const auto fn = [] {
    const char* path = std::getenv("STREAMFUSE_CUDA_DRIVER");
    void* lib = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    return lib ? reinterpret_cast<decltype(&cuStreamSynchronize)>(dlsym(lib, "cuStreamSynchronize"))
               : nullptr;
  }();
  return fn;
}

// Waits for the work queued on the handle's stream before this call.
cublasStatus_t wait_for_stream(cublasHandle_t handle) {
  const auto sync = stream_synchronize();
  if (!sync) return CUBLAS_STATUS_NOT_INITIALIZED;
  const auto stream = reinterpret_cast<CUstream>(reinterpret_cast<FakeHandle*>(handle)->stream);
  return sync(stream) == CUDA_SUCCESS ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}

cublasStatus_t injected_failure() {
  return static_cast<cublasStatus_t>(fail_next.exchange(CUBLAS_STATUS_SUCCESS));
}

}  // namespace

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
  *handle = reinterpret_cast<cublasHandle_t>(new FakeHandle);
  ++live_handles;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete reinterpret_cast<FakeHandle*>(handle);
  --live_handles;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  reinterpret_cast<FakeHandle*>(handle)->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  last_math_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmEx_64(cublasHandle_t handle, cublasOperation_t transa,
                               cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                               const void* alpha, const void* A, cudaDataType Atype, int64_t lda,
                               const void* B, cudaDataType Btype, int64_t ldb, const void* beta,
                               void* C, cudaDataType Ctype, int64_t ldc,
                               cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  last_compute_type = computeType;
  if (const cublasStatus_t s = injected_failure(); s != CUBLAS_STATUS_SUCCESS) return s;
  const cublasStatus_t s = validate(handle, transa, transb, m, n, k, alpha, Atype, lda, Btype, ldb,
                                    beta, Ctype, ldc, computeType, 1);
  if (s != CUBLAS_STATUS_SUCCESS) return s;
  if (const cublasStatus_t w = wait_for_stream(handle); w != CUBLAS_STATUS_SUCCESS) return w;
  ++gemm_calls;
  compute(transa, transb, m, n, k, *static_cast<const float*>(alpha), A, lda, 0, B, ldb, 0,
          *static_cast<const float*>(beta), C, ldc, 0, 1, Atype);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmStridedBatchedEx_64(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m, int64_t n,
    int64_t k, const void* alpha, const void* A, cudaDataType Atype, int64_t lda,
    long long int strideA, const void* B, cudaDataType Btype, int64_t ldb, long long int strideB,
    const void* beta, void* C, cudaDataType Ctype, int64_t ldc, long long int strideC,
    int64_t batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  last_compute_type = computeType;
  if (const cublasStatus_t s = injected_failure(); s != CUBLAS_STATUS_SUCCESS) return s;
  const cublasStatus_t s = validate(handle, transa, transb, m, n, k, alpha, Atype, lda, Btype, ldb,
                                    beta, Ctype, ldc, computeType, batchCount);
  if (s != CUBLAS_STATUS_SUCCESS) return s;
  if (const cublasStatus_t w = wait_for_stream(handle); w != CUBLAS_STATUS_SUCCESS) return w;
  ++batched_calls;
  batched_matrices += batchCount;
  compute(transa, transb, m, n, k, *static_cast<const float*>(alpha), A, lda, strideA, B, ldb,
          strideB, *static_cast<const float*>(beta), C, ldc, strideC, batchCount, Atype);
  return CUBLAS_STATUS_SUCCESS;
}

// Names and texts as libcublas.so.13 gives them.
const char* cublasGetStatusName(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    default:
      return "unrecognized status";
  }
}

const char* cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "the library was not initialized";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "an unsupported value or parameter was passed to the function";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "the function failed to launch on the GPU";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "the requested functionality is not supported";
    default:
      return "unrecognized status";
  }
}

// Test hooks, found by the test through dlopen of this same file (the loader returns the handle
// CudaMatmul's loading made).
long long sf_fake_cublas_stat(const char* name) {
  const std::string_view n(name);
  if (n == "live_handles") return live_handles;
  if (n == "gemm_calls") return gemm_calls;
  if (n == "batched_calls") return batched_calls;
  if (n == "batched_matrices") return batched_matrices;
  if (n == "last_math_mode") return last_math_mode;
  if (n == "last_compute_type") return last_compute_type;
  return -1;
}

void sf_fake_cublas_reset_calls() {
  gemm_calls = 0;
  batched_calls = 0;
  batched_matrices = 0;
}

void sf_fake_cublas_fail_next(int status) { fail_next = status; }

}  // extern "C"
