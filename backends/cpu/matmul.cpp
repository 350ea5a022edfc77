// MatmulEngine: turns the operands into a MatmulLayout, folds a batch over one weight into rows,
// handles empty products, and sends the rest to oneDNN (f32, f16, bf16), the library's own
// blocked loop (integers, and f64, which oneDNN 2.x has no matmul for), its dot-row kernel (f32
// products of one row or one column whose operands are contiguous along k), its few-row kernels
// (batched f32 products of a few rows: attention while decoding and for a short prompt), its
// batched GEMM (attention over more rows) or its one-b GEMM (linear layers); oneDNN's errors
// become streamfuse::Error.
#include "backends/cpu/matmul.h"

#include <array>
#include <boost/container/small_vector.hpp>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <string>
#include <utility>

#include "backends/cpu/isa.h"
#include "backends/cpu/kernels/parallel.h"
#include "backends/cpu/matmul_batch_rows.h"
#include "backends/cpu/matmul_layout.h"
#include "core/ir.h"
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

// Throws ShapeError unless `out_shape` is the product of these operands (matmul_operands_problem).
void check_product_shapes(DType dtype, const MatmulOperand& a, const MatmulOperand& b,
                          const Shape& out_shape) {
  if (std::string why = matmul_operands_problem(a, b, out_shape); !why.empty())
    throw ShapeError(describe_call(dtype, a, b, out_shape) + ": " + why);
}

// Whether the product is rows dotted with a vector (kernels.h, DotRowsArgs): f32, and either one
// row of `a` against columns of `b` (x @ W^T: both contiguous along k), or rows of `a`
// contiguous along k against one contiguous column of `b`. oneDNN reads the first at about two
// thirds of the memory bandwidth, and it is the largest product of a decode step (the tied
// head); the second is the same sums with the roles swapped.
bool is_dot_rows(DType dtype, const MatmulLayout& l) {
  if (dtype != kF32) return false;
  const bool a_rows = l.a.col_stride == 1 || l.k == 1;
  const bool b_columns = l.b.row_stride == 1 || l.k == 1;
  return (l.m == 1 || l.n == 1) && a_rows && b_columns;
}

// At most this many rows of `a` (a short prompt's positions) go to the few-row kernels.
constexpr std::int64_t kFewRows = 4;

// Which of the library's own f32 kernels runs a product, or oneDNN (kOnednn).
enum class OwnKernel : unsigned char { kOnednn, kDotRows, kCombineRows, kBatchedGemm, kOneB };

// The rows (all matrices') of a linear layer that the one-b GEMM takes on AVX2 (own_kernel).
constexpr std::pair<std::int64_t, std::int64_t> kAvx2OneBRows{128, 384};

// The most floats of b the batched GEMM packs per thread (its panels of one matrix): 16 MiB.
constexpr std::int64_t kMaxPackedB = std::int64_t{1} << 22;

// The dot-row kernel takes products of one row or one column (is_dot_rows), and batched f32
// products of at most kFewRows rows of `a` whose `b` differs in every matrix (attention's k or v
// per head; a weight shared by the batch is below) where a's rows and
// b's columns are contiguous along k (q @ k^T); the combined-rows kernel those where b's rows are
// contiguous (att @ v). oneDNN runs the few-row ones through its GEMM driver, which generates its
// kernels the first time it runs any product (20-25 ms, in a process's first token) and makes a
// primitive for each context length.
//
// More rows than that, with a's rows contiguous, go to the batched GEMM where this CPU has FMA
// (x86-64-v3 and up): oneDNN's driver again, whose first run in a process generates its kernels
// (21-24 ms in the first iteration of a block, or on the preparer while a warm process starts).
//
// A product whose b is one matrix for every row (2-D, or a linear layer over a batch, folded to
// one product of its rows: product_as_rows) of more than kFewRows rows per matrix goes to the
// one-b GEMM on AVX-512 where a's rows are contiguous and b's rows are (x @ W with W stored
// [in, out]) or its columns are (x @ W^T, torch.nn.Linear's [out, in]): as fast as oneDNN's
// brgemm kernels at 128 rows of a linear layer, faster from 1,024, and with no primitive to
// generate per shape: a process's first iteration and a model whose shapes change run no JIT
// (bench/README.md, "Linear layers in the library's own GEMM"). Below AVX-512 (AVX2 with FMA)
// only from kAvx2OneBRows.first to .second rows in all: there its 6 x 16 tile took about the
// time of oneDNN's GEMM driver (0.7-1.25x in linear_bench, GPT-2's layers) or less (128 x 768 x
// 3072 through the API: 4.4-4.7 ms against 7.6-8.0), but 1.1-2.5x at 8-64 rows, 1.05-1.3x at
// 512 and 1.15-1.45x at 1,024, where the driver's blocking of a pays (AMD Zen 3, bench/README.md,
// "Linear layers on a CPU without AVX-512"). Which kernel runs depends on the shape and the CPU
// only, so a product's bits do too. Narrower than 16 columns it would compute mostly padding:
// oneDNN.
OwnKernel own_kernel(DType dtype, const MatmulLayout& l) {
  if (is_dot_rows(dtype, l)) return OwnKernel::kDotRows;
  if (dtype != kF32) return OwnKernel::kOnednn;
  if (l.b.matrices(l.batch_rank) == 1)
    return one_b_gemm_takes_rows(l.m * l.batch_count()) && l.m > kFewRows && l.n >= 16 &&
                   l.a.col_stride == 1 && (l.b.col_stride == 1 || l.b.row_stride == 1) &&
                   l.k * 64 <= kMaxPackedB  // one panel
               ? OwnKernel::kOneB
               : OwnKernel::kOnednn;
  if (l.batch_count() < 2) return OwnKernel::kOnednn;
  for (int d = 0; d < l.batch_rank; ++d) {
    const auto i = static_cast<std::size_t>(d);
    if (l.b.batch[i] != l.batch[i]) return OwnKernel::kOnednn;
  }
  if (l.m > kFewRows)
    return isa_level() >= 3 && l.a.col_stride == 1 &&
                   l.k * (l.n + 63) <= kMaxPackedB  // n in panels
               ? OwnKernel::kBatchedGemm
               : OwnKernel::kOnednn;
  if ((l.a.col_stride == 1 && l.b.row_stride == 1) || l.k == 1) return OwnKernel::kDotRows;
  if (l.b.col_stride == 1 || l.n == 1) return OwnKernel::kCombineRows;
  return OwnKernel::kOnednn;
}

// The post-ops `on_layout` (strides over [batch..., m, n]) as steps of the dot-row or few-row
// kernels: each result's operand along `result_dim` (m or n of the layout), its vector's (or
// weight row's) along `vec_dim` (-1: one vector a matrix); their batch offsets are kept in
// `offsets`, one run of batch_count() per step.
int dot_rows_steps(const MatmulLayout& l, std::span<const ProductPostOp> on_layout, int result_dim,
                   int vec_dim, std::array<DotRowsStep, kMaxProductPostOps>& steps,
                   boost::container::small_vector<std::int64_t, 32>& offsets) {
  const auto m = static_cast<std::size_t>(l.batch_rank);
  const std::int64_t batches = l.batch_count();
  if (batches > 1) offsets.resize(on_layout.size() * static_cast<std::size_t>(batches));
  for (std::size_t s = 0; s < on_layout.size(); ++s) {
    const ProductPostOp& p = on_layout[s];
    DotRowsStep& step = steps[s];
    step.op = p.kind == core::OpKind::kAdd   ? 0
              : p.kind == core::OpKind::kSub ? 1
              : p.kind == core::OpKind::kMul ? 2
                                             : 3;
    step.data = p.data;
    step.stride = p.strides[m + static_cast<std::size_t>(result_dim)];
    step.vec_stride = vec_dim < 0 ? 0 : p.strides[m + static_cast<std::size_t>(vec_dim)];
    if (batches == 1) continue;
    // The post-op's strides start with the batch dimensions', as a matrix operand's do.
    std::int64_t* o = offsets.data() + s * static_cast<std::size_t>(batches);
    for (std::int64_t i = 0; i < batches; ++i) o[i] = batch_offset(l, p.strides, i);
  }
  // The offsets are in place only now: the vector no longer grows.
  if (batches > 1)
    for (std::size_t s = 0; s < on_layout.size(); ++s)
      steps[s].batch_offsets = offsets.data() + s * static_cast<std::size_t>(batches);
  return static_cast<int>(on_layout.size());
}

// Each matrix's offset in operand `x`, for a kernel's offsets argument: null for one matrix.
const std::int64_t* matrix_offsets(const MatmulLayout& l, const MatrixLayout& x,
                                   boost::container::small_vector<std::int64_t, 32>& offsets) {
  const std::int64_t batches = l.batch_count();
  if (batches == 1) return nullptr;
  offsets.resize(static_cast<std::size_t>(batches));
  for (std::int64_t i = 0; i < batches; ++i)
    offsets[static_cast<std::size_t>(i)] = batch_offset(l, x, i);
  return offsets.data();
}

void run_dot_rows(const MatmulLayout& l, const void* a, const void* b, void* out, int num_threads,
                  std::span<const ProductPostOp> on_layout = {}) {
  // m == 1 or a few rows of a: the rows are b's columns, the vectors a's rows;
  // otherwise (n == 1) the rows are a's, the vector b's column.
  const bool rows_of_b = l.n != 1 || l.m == 1;
  const MatrixLayout& rows = rows_of_b ? l.b : l.a;
  const MatrixLayout& vec = rows_of_b ? l.a : l.b;
  DotRowsArgs args;
  args.rows = static_cast<const float*>(rows_of_b ? b : a);
  args.vec = static_cast<const float*>(rows_of_b ? a : b);
  args.row_stride = rows_of_b ? l.b.col_stride : l.a.row_stride;
  args.count = rows_of_b ? l.n : l.m;
  args.vectors = rows_of_b ? l.m : 1;
  args.vec_stride = rows_of_b ? l.a.row_stride : 0;
  args.k = l.k;
  args.batches = l.batch_count();
  args.out = static_cast<float*>(out);
  args.num_threads = num_threads;
  // On the stack for the batches a decode step has (attention heads), a run on every call.
  boost::container::small_vector<std::int64_t, 32> rows_offsets, vec_offsets;
  args.rows_offsets = matrix_offsets(l, rows, rows_offsets);
  args.vec_offsets = matrix_offsets(l, vec, vec_offsets);
  std::array<DotRowsStep, kMaxProductPostOps> steps;
  boost::container::small_vector<std::int64_t, 32> step_offsets;
  if (!on_layout.empty()) {
    args.num_steps = rows_of_b ? dot_rows_steps(l, on_layout, 1, 0, steps, step_offsets)
                               : dot_rows_steps(l, on_layout, 0, -1, steps, step_offsets);
    args.steps = steps.data();
  }
  kernels().dot_rows(args);
}

// A product as RowProductArgs, with the offsets and steps they point to: filled in place
// (fill_row_product) and not moved after, since args points into it.
struct RowProduct {
  RowProductArgs args;
  boost::container::small_vector<std::int64_t, 32> a_offsets, b_offsets, step_offsets;
  std::array<DotRowsStep, kMaxProductPostOps> steps;
};

void fill_row_product(RowProduct& p, const MatmulLayout& l, const void* a, const void* b, void* out,
                      int num_threads, std::span<const ProductPostOp> on_layout) {
  RowProductArgs& args = p.args;
  args.a = static_cast<const float*>(a);
  args.a_row_stride = l.a.row_stride;
  args.a_col_stride = l.a.col_stride;
  args.b = static_cast<const float*>(b);
  args.b_row_stride = l.b.row_stride;
  args.b_col_stride = l.b.col_stride;
  args.m = l.m;
  args.k = l.k;
  args.n = l.n;
  args.batches = l.batch_count();
  args.out = static_cast<float*>(out);
  args.num_threads = num_threads;
  args.a_offsets = matrix_offsets(l, l.a, p.a_offsets);
  // One b for every matrix (gemm_one_b) has no offsets.
  if (l.b.matrices(l.batch_rank) > 1) args.b_offsets = matrix_offsets(l, l.b, p.b_offsets);
  if (!on_layout.empty()) {
    args.num_steps = dot_rows_steps(l, on_layout, 1, 0, p.steps, p.step_offsets);
    args.steps = p.steps.data();
  }
}

// The product as RowProductArgs, for `kernel` (combine_rows or batched_gemm).
void run_row_product(void (*kernel)(const RowProductArgs&), const MatmulLayout& l, const void* a,
                     const void* b, void* out, int num_threads,
                     std::span<const ProductPostOp> on_layout) {
  RowProduct p;
  fill_row_product(p, l, a, b, out, num_threads, on_layout);
  kernel(p.args);
}

// RowChainArgs::stage calling a RowStage.
void stage_rows(const void* context, std::int64_t matrix, std::int64_t row, std::int64_t count,
                const float* in, float* out) {
  static_cast<const RowStage*>(context)->rows(matrix, row, count, in, out);
}

// RowChainArgs::columns asking the RowStage.
std::int64_t stage_columns(const void* context, std::int64_t matrix, std::int64_t row,
                           std::int64_t count) {
  return static_cast<const RowStage*>(context)->columns(matrix, row, count);
}

// `post_ops` with strides over the layout's dimensions [batch..., m, n] instead of the product's:
// the same for batch dimensions, 0 for an m or n that a 1-D operand leaves out of the product.
std::array<ProductPostOp, kMaxProductPostOps> post_ops_on_layout(
    const MatmulOperand& a, const MatmulOperand& b, const MatmulLayout& layout,
    const Shape& out_shape, std::span<const ProductPostOp> post_ops) {
  std::array<ProductPostOp, kMaxProductPostOps> on_layout;
  const int rank = out_shape.rank();
  const bool has_m = a.shape.rank() >= 2, has_n = b.shape.rank() >= 2;
  const auto m = static_cast<std::size_t>(layout.batch_rank);
  for (std::size_t i = 0; i < post_ops.size(); ++i) {
    const auto& from = post_ops[i].strides;
    ProductPostOp& p = on_layout[i];
    p.kind = post_ops[i].kind;
    p.data = post_ops[i].data;
    for (std::size_t d = 0; d < m; ++d) p.strides[d] = from[d];
    if (has_m) p.strides[m] = from[static_cast<std::size_t>(rank - (has_n ? 2 : 1))];
    if (has_n) p.strides[m + 1] = from[static_cast<std::size_t>(rank - 1)];
  }
  return on_layout;
}

}  // namespace

bool one_b_gemm_takes_rows(std::int64_t rows) {
  const int level = isa_level();
  return level >= 4 || (level == 3 && rows >= kAvx2OneBRows.first && rows <= kAvx2OneBRows.second);
}

struct MatmulEngine::Impl {
  OnednnMatmul onednn;
};

MatmulEngine::MatmulEngine() : impl_(std::make_unique<Impl>()) {}
MatmulEngine::~MatmulEngine() = default;

bool MatmulEngine::run(DType dtype, const MatmulOperand& a, const MatmulOperand& b, void* out,
                       const Shape& out_shape, int num_threads) {
  return run_product(dtype, a, b, out, out_shape, num_threads, {}, nullptr);
}

bool MatmulEngine::run(const MatmulOperand& a, const MatmulOperand& b, void* out,
                       const Shape& out_shape, int num_threads,
                       std::span<const ProductPostOp> post_ops, bool* applied) {
  *applied = false;
  if (post_ops.size() > kMaxProductPostOps)
    throw Error("matmul: " + std::to_string(post_ops.size()) + " post-ops; at most " +
                std::to_string(kMaxProductPostOps) + " are taken");
  return run_product(kF32, a, b, out, out_shape, num_threads, post_ops, applied);
}

bool MatmulEngine::run_product(DType dtype, const MatmulOperand& a, const MatmulOperand& b,
                               void* out, const Shape& out_shape, int num_threads,
                               std::span<const ProductPostOp> post_ops, bool* applied) {
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
  // The library's own kernels give the same bits on any number of threads: they run on the cores
  // the process's background work leaves (kernels/parallel.h). oneDNN's do not always: its GEMM
  // driver ("gemm:jit", every f32 product of a CPU without AVX-512) splits k over the threads for
  // some shapes (33x100x50 @ W^T, 64x256x8), so its products run on the count the caller gave,
  // and a product gives the same bits whether or not a kernel was compiling meanwhile.
  const int own_threads = threads_beside_background(num_threads);
  if (is_integral(dtype) || dtype == kF64) {
    integer_matmul(dtype, layout, a.data, b.data, out, own_threads);
    return false;
  }
  const auto on_layout = post_ops_on_layout(a, b, layout, out_shape, post_ops);
  const std::span<const ProductPostOp> on_product(on_layout.data(), post_ops.size());
  if (is_dot_rows(dtype, layout)) {  // per matrix, unfolded
    run_dot_rows(layout, a.data, b.data, out, own_threads, on_product);
    if (applied) *applied = !post_ops.empty();
    return false;
  }
  // Copied only where the batch folds into rows.
  const std::optional<ProductAsRows> rows = product_as_rows(layout, on_product);
  const MatmulLayout& l = rows ? rows->layout : layout;
  const std::span<const ProductPostOp> steps = rows ? rows->post_ops() : on_product;
  if (const OwnKernel own = own_kernel(dtype, l); own != OwnKernel::kOnednn) {
    if (own == OwnKernel::kDotRows)  // a few rows of attention, b per matrix
      run_dot_rows(l, a.data, b.data, out, own_threads, steps);
    else
      run_row_product(own == OwnKernel::kCombineRows   ? kernels().combine_rows
                      : own == OwnKernel::kBatchedGemm ? kernels().batched_gemm
                                                       : kernels().gemm_one_b,
                      l, a.data, b.data, out, own_threads, steps);
    if (applied) *applied = !steps.empty();
    return false;
  }
  try {
    return impl_->onednn.run(dtype, l, a.data, b.data, out, num_threads, steps, applied);
  } catch (const dnnl::error& e) {
    throw Error(describe_call(dtype, a, b, out_shape) + " failed in oneDNN: " + e.what() +
                " (status " + std::to_string(static_cast<int>(e.status)) +
                "); a contiguous copy of the operands may work around an unsupported layout");
  }
}

bool MatmulEngine::run_chain(const MatmulOperand& a, const MatmulOperand& b,
                             const Shape& first_shape, const RowStage& stage,
                             const MatmulOperand& second_b, void* out, const Shape& out_shape,
                             int num_threads) {
  check_product_shapes(kF32, a, b, first_shape);
  // The second product's left operand: the stage's result, contiguous (its data is the chain's
  // buffers, never this pointer).
  const MatmulOperand second_a{nullptr, first_shape, contiguous_strides(first_shape)};
  check_product_shapes(kF32, second_a, second_b, out_shape);
  if (first_shape.numel() == 0 || out_shape.numel() == 0 || a.shape[a.shape.rank() - 1] == 0)
    return false;
  const MatmulLayout first = make_matmul_layout(a, b, first_shape);
  const MatmulLayout second = make_matmul_layout(second_a, second_b, out_shape);
  // Both in the batched GEMM, over the same matrices, rows and columns.
  if (own_kernel(kF32, first) != OwnKernel::kBatchedGemm ||
      own_kernel(kF32, second) != OwnKernel::kBatchedGemm || second.m != first.m ||
      second.k != first.n || second.batch_rank != first.batch_rank ||
      second.a.row_stride != first.n || second.a.col_stride != 1)
    return false;
  for (int d = 0; d < first.batch_rank; ++d)
    if (second.batch[static_cast<std::size_t>(d)] != first.batch[static_cast<std::size_t>(d)])
      return false;
  RowChainArgs chain;
  RowProduct p1, p2;
  const int own_threads = threads_beside_background(num_threads);  // the batched GEMM's: any count
  fill_row_product(p1, first, a.data, b.data, nullptr, own_threads, {});
  fill_row_product(p2, second, nullptr, second_b.data, out, own_threads, {});
  chain.first = p1.args;
  chain.second = p2.args;
  chain.stage = &stage_rows;
  chain.columns = &stage_columns;
  chain.context = &stage;
  kernels().batched_gemm_chain(chain);
  return true;
}

bool MatmulEngine::prepare(DType dtype, const MatmulOperand& a, const MatmulOperand& b,
                           const Shape& out_shape, int num_threads,
                           std::span<const ProductPostOp> post_ops) {
  if (post_ops.size() > kMaxProductPostOps || (!post_ops.empty() && dtype != kF32))
    throw Error("matmul: post-ops (at most " + std::to_string(kMaxProductPostOps) +
                ") are prepared for f32 products only");
  if (is_integral(dtype) || dtype == kBool || dtype == kF64) return false;
  check_product_shapes(dtype, a, b, out_shape);
  if (out_shape.numel() == 0 || a.shape[a.shape.rank() - 1] == 0) return false;
  const MatmulLayout layout = make_matmul_layout(a, b, out_shape);
  if (is_dot_rows(dtype, layout)) return false;
  const auto on_layout = post_ops_on_layout(a, b, layout, out_shape, post_ops);
  const std::span<const ProductPostOp> on_product(on_layout.data(), post_ops.size());
  const std::optional<ProductAsRows> rows = product_as_rows(layout, on_product);
  const MatmulLayout& l = rows ? rows->layout : layout;
  if (own_kernel(dtype, l) != OwnKernel::kOnednn) return false;
  try {
    impl_->onednn.prepare(dtype, l, num_threads, rows ? rows->post_ops() : on_product);
  } catch (const dnnl::error& e) {
    throw Error(describe_call(dtype, a, b, out_shape) + " could not be prepared in oneDNN: " +
                e.what() + " (status " + std::to_string(static_cast<int>(e.status)) + ")");
  }
  return true;
}

std::size_t MatmulEngine::cached_primitives() const { return impl_->onednn.cached_primitives(); }

bool MatmulEngine::gemm_driver_ready() { return OnednnMatmul::gemm_driver_ready(); }

}  // namespace streamfuse::backends::cpu
