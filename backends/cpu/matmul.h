// Matrix products on the CPU: oneDNN for float dtypes (primitives cached per shape), a blocked
// loop for integers and f64, a dot-row kernel for f32 matrix-vector products whose operands are
// contiguous along k (a decode step's x @ W^T), for attention's batched f32 products (b per
// matrix) few-row kernels (at most four rows: decoding, a short prompt) and a batched GEMM (more
// rows, on CPUs with FMA), which oneDNN would run through its GEMM driver, and for f32 linear
// layers (x @ W, one W for every row) a one-b GEMM (on AVX-512; on AVX2 at 128 to 384 rows), which
// needs no primitive.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "backends/backend.h"
#include "backends/matmul_layout.h"
#include "core/ir.h"
#include "streamfuse/dtype.h"
#include "streamfuse/shape.h"

namespace streamfuse::backends::cpu {

// A step applied to an f32 product's elements as they are stored (a oneDNN binary post-op):
// element = element <kind> operand, for kind kAdd, kSub, kMul or kDiv, rounded to f32 as the
// element-wise op rounds it. The operand is f32 at `data`, viewed over the product's dimensions
// with `strides` (0 where it broadcasts).
struct ProductPostOp {
  core::OpKind kind = core::OpKind::kAdd;
  const float* data = nullptr;
  std::array<std::int64_t, kMaxRank> strides{};
};

// The most post-ops one product takes: what the matmul builder fuses at most.
inline constexpr std::size_t kMaxProductPostOps = kMaxProductSteps;

// Whether an f32 linear layer (one b for every row, more than four rows a matrix, 16 columns or
// more, contiguous rows) of `rows` rows in all runs in the library's one-b GEMM on this CPU, which
// applies every step as it stores: on AVX-512 at any count, on AVX2 with FMA from 128 to 384
// rows, where its tile is as fast as oneDNN's GEMM driver (matmul.cpp, own_kernel).
bool one_b_gemm_takes_rows(std::int64_t rows);

class MatmulEngine {
 public:
  MatmulEngine();
  ~MatmulEngine();
  MatmulEngine(const MatmulEngine&) = delete;
  MatmulEngine& operator=(const MatmulEngine&) = delete;

  // out = a @ b with NumPy semantics: a 1-D `a` is a row and a 1-D `b` a column, the added
  // dimension absent from `out_shape`; batch dimensions broadcast. `out` is contiguous, of
  // `out_shape`; both operands hold `dtype` (f32, f16, bf16, i32 or i64). f16 and bf16
  // accumulate in f32; integers wrap. `num_threads` is the configured count (0: every core):
  // oneDNN's products run on it, the library's own kernels on the cores the process's background
  // work leaves (threads_beside_background), since only theirs give the same bits on any count.
  // Thread-safe. Throws Error if oneDNN fails. Returns true
  // when this was the process's first run of a oneDNN primitive (created by it or by prepare())
  // worth preparing ahead in the next process (OnednnMatmul::run).
  bool run(DType dtype, const MatmulOperand& a, const MatmulOperand& b, void* out,
           const Shape& out_shape, int num_threads);

  // As run() for an f32 product, then applies `post_ops` (strides over `out_shape`) as it stores
  // the product, where it can: oneDNN's kernels take them (not all broadcasts), the library's own
  // kernels (dot rows, few rows, batched GEMM, one-b GEMM) take any. *applied says whether it
  // did; where it did not (post-ops oneDNN takes in no kernel better than its reference loop, an
  // empty product, a post-op that does not fold with a batch folded into rows), only the product
  // was stored, and the caller applies them.
  bool run(const MatmulOperand& a, const MatmulOperand& b, void* out, const Shape& out_shape,
           int num_threads, std::span<const ProductPostOp> post_ops, bool* applied);

  // a @ b (f32, into first_shape), `stage` over its rows, and their result @ second_b into `out`
  // (contiguous, of out_shape), a tile of rows at a time through the batched GEMM
  // (kernels.h, RowChainArgs): attention's q @ k^T, softmax, att @ v without writing the scores
  // or the weights to memory. Returns false, having run nothing, unless both products run in the
  // batched GEMM (b per matrix, a's rows contiguous, a CPU with FMA) over the same matrices.
  // Throws ShapeError when the shapes are not those of the two products.
  bool run_chain(const MatmulOperand& a, const MatmulOperand& b, const Shape& first_shape,
                 const RowStage& stage, const MatmulOperand& second_b, void* out,
                 const Shape& out_shape, int num_threads);

  // Creates the oneDNN primitive run() would use for operands of these shapes and strides
  // (their data is not read), unless it exists. Returns false where run() uses none (integer
  // dtypes, empty products). Throws Error when the shapes are not those of a product into
  // `out_shape` or oneDNN fails.
  // With `post_ops` (their data is not read): the primitive run() with them uses.
  bool prepare(DType dtype, const MatmulOperand& a, const MatmulOperand& b, const Shape& out_shape,
               int num_threads, std::span<const ProductPostOp> post_ops = {});

  // Primitives currently cached (for tests of the cache bound).
  std::size_t cached_primitives() const;
  // Whether oneDNN's f32 GEMM driver, which generates its kernels the first time any product
  // runs through it (20-25 ms), has done so in this process: prepare() of a product that uses
  // it does (for tests).
  static bool gemm_driver_ready();

 private:
  bool run_product(DType dtype, const MatmulOperand& a, const MatmulOperand& b, void* out,
                   const Shape& out_shape, int num_threads, std::span<const ProductPostOp> post_ops,
                   bool* applied);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace streamfuse::backends::cpu
