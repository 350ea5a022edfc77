#include "fusion/builders/product_chain/optimization.h"

#include <algorithm>
#include <array>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "backends/backend.h"
#include "backends/views.h"
#include "core/log.h"
#include "fusion/builders/product_chain/guard.h"
#include "fusion/offset_context.h"
#include "fusion/segment_tensors.h"

namespace streamfuse::fusion {
namespace {

// The bool input that guards P (guard.h), viewed over P's shape: which columns of a tile's rows
// the kernel reads P at.
struct Guard {
  const unsigned char* data = nullptr;  // null: no guard, every column is read
  std::array<std::int64_t, kMaxRank> strides{};
  Shape shape;  // P's
};

// 1 + the last index in [from, n) where a row of bools (`stride` apart) is true, or `from`:
// scanned from the end, a cache line at a time where the row is contiguous.
std::int64_t last_true_end(const unsigned char* row, std::int64_t stride, std::int64_t from,
                           std::int64_t n) {
  std::int64_t c = n;
  if (stride == 1) {
    constexpr std::int64_t kLine = 64;
    while (c - from >= kLine) {
      unsigned char any = 0;
      for (std::int64_t i = c - kLine; i < c; ++i) any |= row[i];
      if (any) break;
      c -= kLine;
    }
  }
  for (; c > from; --c)
    if (row[(c - 1) * stride]) return c;
  return from;
}

// The reduce kernel as the chain's stage: matrix m's rows are the kernel's rows from m * rows on.
class KernelRows final : public backends::RowStage {
 public:
  KernelRows(const jit::RowKernel& kernel, std::int64_t rows_per_matrix, Guard guard)
      : kernel_(kernel), rows_(rows_per_matrix), guard_(std::move(guard)) {
    if (!guard_.data) return;
    const int rank = guard_.shape.rank();
    for (int d = 0; d + 2 < rank; ++d)
      if (guard_.strides[static_cast<std::size_t>(d)] != 0) return;
    // The same mask for every matrix (a causal mask broadcast over batch and heads): each row's
    // end once, instead of once per matrix.
    row_ends_.resize(static_cast<std::size_t>(rows_));
    for (std::int64_t r = 0; r < rows_; ++r)
      row_ends_[static_cast<std::size_t>(r)] = row_end(0, r, 0);
  }

  // 1 + the last column where the guard is true in any of the rows.
  std::int64_t columns(std::int64_t matrix, std::int64_t row,
                       std::int64_t count) const noexcept override {
    if (!guard_.data) return -1;
    std::int64_t end = 0;
    if (!row_ends_.empty()) {
      for (std::int64_t r = row; r < row + count; ++r)
        end = std::max(end, row_ends_[static_cast<std::size_t>(r)]);
      return end;
    }
    std::int64_t offset = 0, rest = matrix;
    for (int d = guard_.shape.rank() - 3; d >= 0; --d) {
      offset += (rest % guard_.shape[d]) * guard_.strides[static_cast<std::size_t>(d)];
      rest /= guard_.shape[d];
    }
    for (std::int64_t r = row; r < row + count; ++r) end = row_end(offset, r, end);
    return end;
  }

  void rows(std::int64_t matrix, std::int64_t row, std::int64_t count, const float* in,
            float* out) const noexcept override {
    const std::array<char*, 2> buffers{reinterpret_cast<char*>(const_cast<float*>(in)),
                                       reinterpret_cast<char*>(out)};
    kernel_.rows(matrix * rows_ + row, count, buffers);
  }

 private:
  // max(end, 1 + the last column where row `r` of the matrix at `offset` is true).
  std::int64_t row_end(std::int64_t offset, std::int64_t r, std::int64_t end) const {
    const int rank = guard_.shape.rank();
    return last_true_end(
        guard_.data + offset + r * guard_.strides[static_cast<std::size_t>(rank - 2)],
        guard_.strides[static_cast<std::size_t>(rank - 1)], end, guard_.shape[rank - 1]);
  }

  const jit::RowKernel& kernel_;
  std::int64_t rows_;
  Guard guard_;
  std::vector<std::int64_t> row_ends_;  // per row, where the mask is one for every matrix
};

}  // namespace

ProductChainOptimization::ProductChainOptimization(std::size_t lead, std::size_t middle_len,
                                                   std::size_t aside, std::size_t drops,
                                                   int product_input,
                                                   std::unique_ptr<ReduceOptimization> middle)
    : lead_(lead),
      middle_len_(middle_len),
      aside_(aside),
      drops_(drops),
      product_input_(product_input),
      guard_(guarding_input(middle->kernel().program, product_input)),
      middle_(std::move(middle)) {}

void ProductChainOptimization::run_chain_ops(ExecutionContext& context) const {
  context.run_operation(0);
  for (std::size_t i = middle_first(); i < middle_end(); ++i) context.run_operation(i);
  context.run_operation(second());
}

bool ProductChainOptimization::is_aside(std::size_t i) const {
  return (i > 0 && i < middle_first()) || (i >= middle_end() && i < second());
}

std::string ProductChainOptimization::describe() const {
  return "product chain: product, " + middle_->describe() + ", product, a tile of rows at a time";
}

// The plan without the chain: the first product, the reduce kernel, the second product. All or
// nothing as an optimization must be: the first product's inputs are erased only once the
// kernel ran (it throws only before changing anything), and its result is taken back if the
// kernel throws.
void ProductChainOptimization::run_one_after_another(ExecutionContext& context) const {
  const core::OpDesc& first = context.op(0);
  const core::TensorId p = first.outputs[0].id;
  core::Failure failure;
  std::array<backends::TensorHandle, 2> inputs = product_operands(context, first, &failure);
  if (failure) {  // each op as unfused: its failure passes to what reads its result
    run_chain_ops(context);
    return;
  }
  backends::TensorHandle product;
  context.backend().execute(first, inputs, std::span(&product, 1));
  context.set_handle(p, std::move(product));
  OffsetContext middle(context, middle_first());
  try {
    middle_->execute(middle);
  } catch (...) {
    context.erase(p);
    throw;
  }
  erase_last_uses(context, first);
  context.run_operation(second());
}

bool ProductChainOptimization::run_tiled(ExecutionContext& context) const {
  backends::Backend& backend = context.backend();
  const core::OpDesc& first = context.op(0);
  const core::OpDesc& second = context.op(this->second());
  const core::TensorId p = first.outputs[0].id;
  core::Failure failure;
  std::array<backends::TensorHandle, 2> inputs = product_operands(context, first, &failure);
  if (failure) return false;
  const backends::TensorHandle v = context.handle(second.inputs[1].id, &failure);
  if (failure) return false;

  // The kernel's operands as the reduce optimization gives them, P and W buffered: their handles
  // only say how a contiguous tensor of P's shape is laid out.
  OffsetContext middle(context, middle_first());
  const TracedBlock& k = middle_->kernel();
  const std::vector<TracedTensor>& tensors = middle_->tensors();
  const Shape& shape = first.outputs[0].shape;
  backends::TensorHandle layout;
  layout.strides = backends::contiguous_strides(shape);
  boost::container::small_vector<backends::TensorHandle, 8> handles(k.inputs.size());
  boost::container::small_vector<jit::LaunchOperand, 8> ins, outs;
  int product_operand = -1;
  for (std::size_t i = 0; i < k.inputs.size(); ++i) {
    const core::TensorDesc& d = desc_at(middle, tensors[k.inputs[i]].source);
    if (d.id == p) {
      product_operand = static_cast<int>(i);
      ins.push_back({&layout, d.shape, d.dtype});
      continue;
    }
    handles[i] = context.handle(d.id, &failure);
    if (failure) return false;
    ins.push_back({&handles[i], d.shape, d.dtype});
  }
  // The builder found P there; a segment that matched its plan has it there too.
  if (product_operand != product_input_) return false;
  outs.push_back({&layout, shape, kF32});
  boost::container::small_vector<std::int64_t, 8> scalars;
  for (std::size_t s = 0; s < k.scalars.size(); ++s) {
    const Scalar& value = middle.op(k.scalars[s].op).scalars[k.scalars[s].slot];
    scalars.push_back(jit::scalar_bits(k.program.scalars[s], value));
  }
  const std::array<int, 2> buffered{product_operand, static_cast<int>(ins.size())};
  const std::unique_ptr<jit::RowKernel> rows =
      context.launcher().row_kernel(k.program, k.facts, shape, ins, outs, scalars, buffered);
  if (!rows) return false;
  // Where a mask guards P, the chain computes P only at the columns the mask keeps.
  Guard guard;
  if (guard_ >= 0) {
    const int g = guard_;
    const core::TensorDesc& d =
        desc_at(middle, tensors[k.inputs[static_cast<std::size_t>(g)]].source);
    const backends::TensorHandle& h = handles[static_cast<std::size_t>(g)];
    guard.data = reinterpret_cast<const unsigned char*>(backends::element_ptr(h, kBool));
    guard.strides = backends::broadcast_strides(d.shape, h.strides, shape);
    guard.shape = shape;
  }
  const KernelRows stage(*rows, shape[shape.rank() - 2], std::move(guard));
  backends::TensorHandle result;
  if (!backend.execute_product_chain(first, inputs, stage, second, v, result)) return false;

  // As the three would leave them: the first product's inputs, the kernel's and the second
  // product's b erased where this was their last use; P and W never existed.
  erase_last_uses(context, first);
  for (const TracedTensor& t : tensors) {
    const core::TensorDesc& d = desc_at(middle, t.source);
    if (t.erase && d.id != p) context.erase(d.id);
  }
  if (second.inputs[1].status == core::TensorStatus::kReadWrite) context.erase(second.inputs[1].id);
  context.set_handle(second.outputs[0].id, std::move(result));
  return true;
}

// The views among the chain's ops run first, on their own (they read nothing the chain makes and
// let go of nothing it reads), and the drops after it. In between the optimization never throws:
// where the chain or the products one after the other fail (they change nothing then), the
// chain's ops run one by one.
void ProductChainOptimization::execute(ExecutionContext& context) {
  for (std::size_t i = 1; i < second(); ++i)
    if (is_aside(i) && context.op(i).kind != core::OpKind::kDrop) context.run_operation(i);
  bool tiled = false;
  try {
    tiled = run_tiled(context);
    if (!tiled) run_one_after_another(context);
  } catch (const std::exception& e) {
    core::warn_once(std::string("product-chain-fallback:") + e.what(),
                    std::string("a fused segment failed and ran unfused instead: ") + e.what());
    run_chain_ops(context);
  }
  // Tiled, P and W never existed: a variable's drop of them has nothing to drop.
  const core::TensorId p = context.op(0).outputs[0].id, w = context.op(second()).inputs[0].id;
  for (std::size_t i = 1; i < len(); ++i) {
    const core::OpDesc& op = context.op(i);
    if (i <= second() && !(is_aside(i) && op.kind == core::OpKind::kDrop)) continue;
    if (tiled && (op.inputs[0].id == p || op.inputs[0].id == w)) continue;
    context.run_operation(i);
  }
}

}  // namespace streamfuse::fusion
