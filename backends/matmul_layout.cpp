// make_matmul_layout: the rule that turns a product's operands into batches of strided matrices.
#include "backends/matmul_layout.h"

#include <optional>

#include "core/ir.h"

namespace streamfuse::backends {
namespace {

// Whether `shape` has at most 2^62 elements.
bool countable(const Shape& shape) {
  constexpr std::int64_t kMaxElements = std::int64_t{1} << 62;
  std::int64_t n = 1;
  for (std::int64_t d : shape) {
    if (d == 0) return true;
    if (d > kMaxElements / n) return false;
    n *= d;
  }
  return true;
}

}  // namespace

std::string matmul_operands_problem(const MatmulOperand& a, const MatmulOperand& b,
                                    const Shape& out_shape) {
  constexpr std::int64_t kMaxSize = std::int64_t{1} << 31, kMaxStride = std::int64_t{1} << 40;
  for (const MatmulOperand* x : {&a, &b})
    for (int d = 0; d < x->shape.rank(); ++d) {
      const std::int64_t size = x->shape[d], stride = x->strides[static_cast<std::size_t>(d)];
      if (size < 0 || size > kMaxSize || stride < -kMaxStride || stride > kMaxStride)
        return "a size or stride is out of range";
    }
  std::string why;
  const std::optional<Shape> expected = core::matmul_result_shape(a.shape, b.shape, why);
  if (!expected) return why;
  if (*expected != out_shape) return "the product's shape is " + expected->to_string();
  if (!countable(a.shape) || !countable(b.shape) || !countable(out_shape))
    return "an operand or the product has more than 2^62 elements";
  return {};
}

MatmulLayout make_matmul_layout(const MatmulOperand& a, const MatmulOperand& b,
                                const Shape& out_shape) {
  MatmulLayout l;
  const int ra = a.shape.rank(), rb = b.shape.rank();
  l.batch_rank = out_shape.rank() - (ra >= 2 ? 1 : 0) - (rb >= 2 ? 1 : 0);
  for (int d = 0; d < l.batch_rank; ++d) l.batch[static_cast<std::size_t>(d)] = out_shape[d];

  // A 1-D a is the row (1, K), a 1-D b the column (K, 1); the added dimension has stride 0.
  const auto& as = a.strides;
  const auto& bs = b.strides;
  l.k = a.shape[ra - 1];
  l.m = ra >= 2 ? a.shape[ra - 2] : 1;
  l.n = rb >= 2 ? b.shape[rb - 1] : 1;
  l.a = {
      .rows = l.m, .cols = l.k, .row_stride = ra >= 2 ? as[ra - 2] : 0, .col_stride = as[ra - 1]};
  l.b = {.rows = l.k,
         .cols = l.n,
         .row_stride = rb >= 2 ? bs[rb - 2] : bs[0],
         .col_stride = rb >= 2 ? bs[rb - 1] : 0};

  // Batch dimensions align from the right; a missing, size-1 or stride-0 one broadcasts.
  auto fill_batch = [&](const MatmulOperand& x, MatrixLayout& out) {
    const int own = x.shape.rank() - 2;
    for (int d = 0; d < l.batch_rank; ++d) {
      const auto i = static_cast<std::size_t>(d);
      const int src = d - (l.batch_rank - own);
      const std::int64_t size = src >= 0 ? x.shape[src] : 1;
      const std::int64_t stride = src >= 0 ? x.strides[static_cast<std::size_t>(src)] : 0;
      const bool broadcast = size == 1 || stride == 0;
      out.batch[i] = broadcast ? 1 : size;
      out.batch_strides[i] = broadcast ? 0 : stride;
    }
  };
  fill_batch(a, l.a);
  fill_batch(b, l.b);
  // oneDNN needs an operand to span each batch dimension of the product. Where both broadcast
  // a dimension the product still has (expanded views: size > 1, stride 0), `a` spans it with
  // stride 0.
  for (int d = 0; d < l.batch_rank; ++d) {
    const auto i = static_cast<std::size_t>(d);
    if (l.a.batch[i] == 1 && l.b.batch[i] == 1) l.a.batch[i] = l.batch[i];
  }
  return l;
}

}  // namespace streamfuse::backends
