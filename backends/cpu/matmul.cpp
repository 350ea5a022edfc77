// MatmulEngine: turns the operands into a MatmulLayout, handles empty products, and sends the
// rest to oneDNN (float dtypes) or the integer loop; oneDNN's errors become streamfuse::Error.
#include "backends/cpu/matmul.h"

#include <cstring>
#include <optional>
#include <string>

#include <oneapi/dnnl/dnnl.hpp>

#include "backends/cpu/matmul_layout.h"
#include "stream/ir.h"
#include "streamfuse/error.h"

namespace streamfuse::backends::cpu {
namespace {

// "[2, 3] (strides [3, 1])" for messages.
std::string describe(const MatmulOperand& x) {
  std::string s = x.shape.to_string() + " (strides [";
  for (int d = 0; d < x.shape.rank(); ++d) {
    if (d) s += ", ";
    s += std::to_string(x.strides[static_cast<std::size_t>(d)]);
  }
  return s + "])";
}

std::string describe_call(DType dtype, const MatmulOperand& a, const MatmulOperand& b,
                          const Shape& out_shape) {
  return "matmul of " + std::string(dtype_name(dtype)) + " operands " + describe(a) + " and " +
         describe(b) + " into " + out_shape.to_string();
}

// Throws ShapeError unless `out_shape` is the product of operands of these shapes (the API's
// rule), with sizes and strides small enough that no address computation overflows. The API
// checks the shapes before it records a product; prepared ops come from files, so they are
// checked again.
void check_product_shapes(DType dtype, const MatmulOperand& a, const MatmulOperand& b,
                          const Shape& out_shape) {
  constexpr std::int64_t kMaxSize = std::int64_t{1} << 31, kMaxStride = std::int64_t{1} << 40;
  auto fail = [&](const std::string& why) {
    throw ShapeError(describe_call(dtype, a, b, out_shape) + ": " + why);
  };
  for (const MatmulOperand* x : {&a, &b})
    for (int d = 0; d < x->shape.rank(); ++d) {
      const std::int64_t size = x->shape[d], stride = x->strides[static_cast<std::size_t>(d)];
      if (size < 0 || size > kMaxSize || stride < -kMaxStride || stride > kMaxStride)
        fail("a size or stride is out of range");
    }
  std::string why;
  const std::optional<Shape> expected = stream::matmul_result_shape(a.shape, b.shape, why);
  if (!expected) fail(why);
  if (*expected != out_shape) fail("the product's shape is " + expected->to_string());
}

}  // namespace

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

struct MatmulEngine::Impl {
  OnednnMatmul onednn;
};

MatmulEngine::MatmulEngine() : impl_(std::make_unique<Impl>()) {}
MatmulEngine::~MatmulEngine() = default;

bool MatmulEngine::run(DType dtype, const MatmulOperand& a, const MatmulOperand& b, void* out,
                       const Shape& out_shape, int num_threads) {
  if (dtype == kBool)
    throw DTypeError(describe_call(dtype, a, b, out_shape) +
                     ": bool has no matrix product; convert the operands to f32 or i32 first");
  if (a.shape.rank() < 1 || b.shape.rank() < 1)
    throw ShapeError(describe_call(dtype, a, b, out_shape) +
                     ": operands need at least one dimension");
  const std::int64_t numel = out_shape.numel();
  if (numel == 0) return false;  // M, N or a batch dimension is 0: nothing to write
  const MatmulLayout layout = make_matmul_layout(a, b, out_shape);
  if (layout.k == 0) {  // an empty sum; all-zero bits are 0 in every dtype
    std::memset(out, 0, static_cast<std::size_t>(numel) * element_size(dtype));
    return false;
  }
  if (is_integral(dtype)) {
    integer_matmul(dtype, layout, a.data, b.data, out, num_threads);
    return false;
  }
  try {
    return impl_->onednn.run(dtype, layout, a.data, b.data, out, num_threads);
  } catch (const dnnl::error& e) {
    throw Error(describe_call(dtype, a, b, out_shape) + " failed in oneDNN: " + e.what() +
                " (status " + std::to_string(static_cast<int>(e.status)) +
                "); a contiguous copy of the operands may work around an unsupported layout");
  }
}

bool MatmulEngine::prepare(DType dtype, const MatmulOperand& a, const MatmulOperand& b,
                           const Shape& out_shape, int num_threads) {
  if (is_integral(dtype) || dtype == kBool) return false;
  check_product_shapes(dtype, a, b, out_shape);
  if (out_shape.numel() == 0 || a.shape[a.shape.rank() - 1] == 0) return false;
  const MatmulLayout layout = make_matmul_layout(a, b, out_shape);
  try {
    impl_->onednn.prepare(dtype, layout, num_threads);
  } catch (const dnnl::error& e) {
    throw Error(describe_call(dtype, a, b, out_shape) + " could not be prepared in oneDNN: " +
                e.what() + " (status " + std::to_string(static_cast<int>(e.status)) + ")");
  }
  return true;
}

std::size_t MatmulEngine::cached_primitives() const { return impl_->onednn.cached_primitives(); }

}  // namespace streamfuse::backends::cpu
