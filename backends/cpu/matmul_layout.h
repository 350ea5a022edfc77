// The matrix product as its two engines see it (private to backends/cpu/matmul*.cpp): both
// operands as batches of strided matrices over the product's batch dimensions, broadcasting
// resolved to size-1 dimensions, 1-D operands already turned into a row or a column.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "backends/cpu/matmul.h"
#include "streamfuse/dtype.h"
#include "streamfuse/shape.h"

namespace streamfuse::backends::cpu {

// One operand: `rows` x `cols` matrices with element strides; per batch dimension of the product
// its own size (1 where it broadcasts) and stride (0 where it broadcasts).
struct MatrixLayout {
  std::array<std::int64_t, kMaxRank> batch{};
  std::array<std::int64_t, kMaxRank> batch_strides{};
  std::int64_t rows = 1, cols = 1;
  std::int64_t row_stride = 0, col_stride = 0;

  // Distinct matrices (the product of the operand's own batch sizes).
  std::int64_t matrices(int batch_rank) const {
    std::int64_t count = 1;
    for (int d = 0; d < batch_rank; ++d) count *= batch[static_cast<std::size_t>(d)];
    return count;
  }
};

struct MatmulLayout {
  int batch_rank = 0;
  std::array<std::int64_t, kMaxRank> batch{};  // the product's batch dimensions
  std::int64_t m = 1, k = 1, n = 1;
  MatrixLayout a;  // m x k
  MatrixLayout b;  // k x n

  // Matrices in the product (the product of the batch dimensions).
  std::int64_t batch_count() const {
    std::int64_t count = 1;
    for (int d = 0; d < batch_rank; ++d) count *= batch[static_cast<std::size_t>(d)];
    return count;
  }
};

// The layout of out = a @ b for `out_shape` (already validated by the caller). A batch dimension
// of size 1, missing, or of stride 0 becomes a size-1, stride-0 batch dimension of the operand,
// except where both operands broadcast it: then `a` has it at full size with stride 0.
MatmulLayout make_matmul_layout(const MatmulOperand& a, const MatmulOperand& b,
                                const Shape& out_shape);

// Element offset of matrix number `index` (row-major over the product's batch dimensions) in `x`.
inline std::int64_t batch_offset(const MatmulLayout& layout, const MatrixLayout& x,
                                 std::int64_t index) {
  std::int64_t offset = 0;
  for (int d = layout.batch_rank - 1; d >= 0; --d) {
    const auto i = static_cast<std::size_t>(d);
    offset += (index % layout.batch[i]) * x.batch_strides[i];
    index /= layout.batch[i];
  }
  return offset;
}

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
  // thread count), whether that run or prepare() created it.
  bool run(DType dtype, const MatmulLayout& layout, const void* a, const void* b, void* out,
           int num_threads);
  // Creates the primitive run() with these arguments will use; returns at once if it exists,
  // waits if another thread is creating it.
  void prepare(DType dtype, const MatmulLayout& layout, int num_threads);
  std::size_t cached_primitives() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace streamfuse::backends::cpu
