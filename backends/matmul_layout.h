// The matrix product as the backends' engines see it: both operands as batches of strided
// matrices over the product's batch dimensions, broadcasting resolved to size-1 dimensions, 1-D
// operands already turned into a row or a column. One rule for the CPU (oneDNN, the integer loop)
// and CUDA (cuBLAS).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "streamfuse/shape.h"

namespace streamfuse::backends {

// One operand: elements of the product's dtype at `data` (a host or a device address), with
// element strides per dimension (any layout, 0 for broadcast dimensions).
struct MatmulOperand {
  const void* data = nullptr;
  Shape shape;
  std::array<std::int64_t, kMaxRank> strides{};
};

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

// Why `out_shape` is not the product of operands shaped and strided as `a` and `b`, or empty
// when it is: the API's shape rule (stream::matmul_result_shape), sizes of at most 2^31 and
// strides of at most 2^40 elements either way (so no address computation overflows), and
// operands and product of at most 2^62 elements (so their element counts do not overflow). The
// API checks shapes before it records a product; prepared ops come from files, so their decoder
// and the backends check them with this before they make anything of them.
std::string matmul_operands_problem(const MatmulOperand& a, const MatmulOperand& b,
                                    const Shape& out_shape);

// The layout of out = a @ b for `out_shape` (already validated by the caller). A batch dimension
// of size 1, missing, or of stride 0 becomes a size-1, stride-0 batch dimension of the operand,
// except where both operands broadcast it: then `a` has it at full size with stride 0.
MatmulLayout make_matmul_layout(const MatmulOperand& a, const MatmulOperand& b,
                                const Shape& out_shape);

// Element offset of matrix number `index` (row-major over the product's batch dimensions) in a
// tensor with `batch_strides` over them.
inline std::int64_t batch_offset(const MatmulLayout& layout,
                                 const std::array<std::int64_t, kMaxRank>& batch_strides,
                                 std::int64_t index) {
  std::int64_t offset = 0;
  for (int d = layout.batch_rank - 1; d >= 0; --d) {
    const auto i = static_cast<std::size_t>(d);
    offset += (index % layout.batch[i]) * batch_strides[i];
    index /= layout.batch[i];
  }
  return offset;
}
// The same in operand `x`.
inline std::int64_t batch_offset(const MatmulLayout& layout, const MatrixLayout& x,
                                 std::int64_t index) {
  return batch_offset(layout, x.batch_strides, index);
}

}  // namespace streamfuse::backends
