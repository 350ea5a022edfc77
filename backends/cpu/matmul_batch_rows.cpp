#include "backends/cpu/matmul_batch_rows.h"

#include <algorithm>

namespace streamfuse::backends::cpu {
namespace {

// The stride S at which the rows r = (matrix, i) of an operand lie, at r * S, given its strides
// along the product's batch dimensions and its rows; nullopt if they do not. S is the stride of
// the innermost dimension of more than one element (rows, then the batch dimensions inwards
// out); each outer one must then step over all the rows inside it.
std::optional<std::int64_t> folded_row_stride(const MatmulLayout& l,
                                              const std::int64_t* batch_strides,
                                              std::int64_t row_stride) {
  std::optional<std::int64_t> s;
  if (l.m > 1) s = row_stride;
  std::int64_t span = l.m;  // rows inside the dimension being checked
  for (int d = l.batch_rank - 1; d >= 0; --d) {
    const std::int64_t size = l.batch[static_cast<std::size_t>(d)];
    if (size == 1) continue;
    const std::int64_t stride = batch_strides[d];
    if (!s) s = stride;  // one row per matrix: the matrices' stride is the rows'
    std::int64_t expected = 0;
    if (__builtin_mul_overflow(span, *s, &expected) || stride != expected) return std::nullopt;
    if (__builtin_mul_overflow(span, size, &span)) return std::nullopt;
  }
  return s ? *s : row_stride;
}

}  // namespace

std::optional<MatmulLayout> batch_as_rows(const MatmulLayout& l) {
  if (l.batch_rank == 0) return std::nullopt;
  for (int d = 0; d < l.batch_rank; ++d)
    if (l.batch[static_cast<std::size_t>(d)] > 1 && l.b.batch[static_cast<std::size_t>(d)] != 1)
      return std::nullopt;
  const std::optional<std::int64_t> rows =
      folded_row_stride(l, l.a.batch_strides.data(), l.a.row_stride);
  if (!rows) return std::nullopt;
  MatmulLayout f;
  f.batch_rank = 0;
  f.m = l.batch_count() * l.m;
  f.k = l.k;
  f.n = l.n;
  f.a.rows = f.m;
  f.a.cols = l.k;
  f.a.row_stride = *rows;
  f.a.col_stride = l.a.col_stride;
  f.b.rows = l.k;
  f.b.cols = l.n;
  f.b.row_stride = l.b.row_stride;
  f.b.col_stride = l.b.col_stride;
  return f;
}

std::optional<ProductPostOp> post_op_as_rows(const MatmulLayout& l, const ProductPostOp& p) {
  const auto r = static_cast<std::size_t>(l.batch_rank);
  const std::optional<std::int64_t> rows = folded_row_stride(l, p.strides.data(), p.strides[r]);
  if (!rows) return std::nullopt;
  ProductPostOp f = p;
  f.strides = {};
  f.strides[0] = *rows;
  f.strides[1] = p.strides[r + 1];
  return f;
}

std::optional<ProductAsRows> product_as_rows(const MatmulLayout& l,
                                             std::span<const ProductPostOp> post_ops) {
  const std::optional<MatmulLayout> folded = batch_as_rows(l);
  if (!folded) return std::nullopt;
  ProductAsRows r{*folded, {}, 0};
  for (const ProductPostOp& p : post_ops.first(std::min(post_ops.size(), r.post.size()))) {
    const std::optional<ProductPostOp> as_rows = post_op_as_rows(l, p);
    if (!as_rows) return ProductAsRows{*folded, {}, 0};
    r.post[r.num_post++] = *as_rows;
  }
  return r;
}

}  // namespace streamfuse::backends::cpu
