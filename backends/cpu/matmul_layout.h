// The CPU's two matrix product engines (private to backends/cpu/matmul*.cpp), over the layout of
// backends/matmul_layout.h.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "backends/cpu/matmul.h"
#include "backends/matmul_layout.h"
#include "streamfuse/dtype.h"
#include "streamfuse/shape.h"

namespace streamfuse::backends::cpu {

// i32 / i64 products (matmul_integer.cpp): a blocked, packed loop with wrapping arithmetic, over
// at most `num_threads` threads (0: all cores). Requires m, n, k and the batch all non-empty.
void integer_matmul(DType dtype, const MatmulLayout& layout, const void* a, const void* b,
                    void* out, int num_threads);

// f32 / bf16 / f16 products through oneDNN (matmul_onednn.cpp), with a bounded LRU cache of
// primitives. Thread-safe. Requires m, n, k and the batch all non-empty; throws dnnl::error.
class OnednnMatmul {
 public:
  // The most primitives kept; the least recently used one goes first.
  static constexpr std::size_t kMaxCachedPrimitives = 256;

  OnednnMatmul();
  ~OnednnMatmul();
  OnednnMatmul(const OnednnMatmul&) = delete;
  OnednnMatmul& operator=(const OnednnMatmul&) = delete;

  // Returns true when this is the process's first run of the primitive for (dtype, layout,
  // thread count), whether that run or prepare() created it, and the primitive is worth
  // preparing ahead: not one of the GEMM driver's, which take microseconds to make, unless it is
  // the process's first product through the driver (preparing it warms the driver).
  // With `post_ops` (an f32 product, at most kMaxProductPostOps, strides over the layout's
  // dimensions [batch..., m, n]): applies them as it stores the
  // product where oneDNN has a kernel for them, and sets *applied to whether it did; otherwise
  // stores the product alone.
  bool run(DType dtype, const MatmulLayout& layout, const void* a, const void* b, void* out,
           int num_threads, std::span<const ProductPostOp> post_ops = {}, bool* applied = nullptr);
  // Creates the primitive run() with these arguments will use; returns at once if it exists,
  // waits if another thread is creating it.
  // Prepares a product that runs through oneDNN's f32 GEMM driver (its "gemm:jit") by also
  // running one small product through the driver: the driver generates its kernels on its
  // first run, whatever the shape (see matmul_onednn.cpp).
  void prepare(DType dtype, const MatmulLayout& layout, int num_threads,
               std::span<const ProductPostOp> post_ops = {});
  std::size_t cached_primitives() const;
  // Whether the driver has generated its kernels in this process (a product ran through it, or
  // was prepared).
  static bool gemm_driver_ready();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace streamfuse::backends::cpu
