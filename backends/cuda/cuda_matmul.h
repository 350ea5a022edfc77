// Matrix products of float dtypes on a CUDA device through cuBLAS (loaded at run time: see
// cublas_api.h). The CUDA backend runs integer products with a generated kernel instead.
//
// Row-major products in cuBLAS's column-major convention: a row-major m x n `out` is the
// column-major n x m matrix out^T = b^T a^T, so cuBLAS computes with the operands swapped, each
// read as stored (a row-major matrix is its transpose in column-major order) or transposed.
//
// Precision: f32 products use CUBLAS_COMPUTE_32F under CUBLAS_DEFAULT_MATH, so TF32 tensor cores
// are never used and results agree with the CPU's within f32 rounding; f16 and bf16 products
// accumulate in f32 (CUBLAS_COMPUTE_32F) and, through
// CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION, never sum partial results in 16 bits.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <memory>

#include "backends/matmul_layout.h"
#include "streamfuse/dtype.h"
#include "streamfuse/shape.h"

namespace streamfuse::backends::cuda {

class DeviceContext;

class CudaMatmul {
 public:
  // Loads nothing yet: cuBLAS is loaded by the first run() that needs it.
  explicit CudaMatmul(std::shared_ptr<const DeviceContext> context);
  // Destroys the cuBLAS handles, with the device's context current.
  ~CudaMatmul();
  CudaMatmul(const CudaMatmul&) = delete;
  CudaMatmul& operator=(const CudaMatmul&) = delete;

  // True when cuBLAS can read `x` as it is laid out: its matrices have unit stride along rows or
  // columns and a valid leading dimension, and its batch dimensions that do not broadcast (size 1
  // or stride 0) collapse to one non-negative batch stride. When false, pass a contiguous copy.
  static bool reads_directly(const MatmulOperand& x);

  // Enqueues out = a @ b on `stream` with NumPy semantics: a 1-D `a` is a row and a 1-D `b` a
  // column, the added dimension absent from `out_shape`; batch dimensions broadcast. `out` is
  // contiguous, of `out_shape` (already validated by the caller); operands and `out` are device
  // addresses of `dtype`, f32, f16 or bf16, and operands satisfy reads_directly(). An empty sum
  // (k == 0) fills `out` with zeros. Thread-safe. Throws DeviceError without cuBLAS (naming why),
  // Error naming the product when cuBLAS or the driver fails, and Error("internal: ...") for
  // other dtypes or operands reads_directly() rejects.
  void run(DType dtype, const MatmulOperand& a, const MatmulOperand& b, void* out,
           const Shape& out_shape, CUstream stream);

  // Destroys the cuBLAS handle made for `stream`, if any; call it before destroying the stream,
  // whose address a later stream may reuse, and not while a run() on it is in progress. Waits
  // for the device to finish its work (cublasDestroy synchronizes).
  void release_stream(CUstream stream);
  // cuBLAS handles held now: one per stream run() has been given.
  std::size_t handles() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace streamfuse::backends::cuda
