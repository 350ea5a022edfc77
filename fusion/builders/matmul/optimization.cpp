#include "fusion/builders/matmul/optimization.h"

#include <array>

#include <boost/container/small_vector.hpp>

#include "backends/backend.h"
#include "fusion/offset_context.h"
#include "fusion/segment_tensors.h"

namespace streamfuse::fusion {

MatmulOptimization::MatmulOptimization(std::size_t len, std::vector<MatmulStep> steps,
                                       std::unique_ptr<Optimization> epilogue)
    : len_(len), steps_(std::move(steps)), epilogue_(std::move(epilogue)) {}

std::string MatmulOptimization::describe() const {
  // Only the counts: the steps' kinds are in the plan's ops, which the fusion log names.
  return "matmul: 1 product, " + std::to_string(steps_.size()) + " step(s) applied as it is stored";
}

void MatmulOptimization::run_one_by_one(ExecutionContext& context) const {
  for (std::size_t i = 0; i < len_; ++i) context.run_operation(i);
}

// All or nothing, as an optimization must be: handles are only read until the backend has
// stored the result (the element-wise epilogue is all or nothing in turn, and the product it
// reads is then published as running the product alone would). A failed operand runs the ops one
// by one, which gives each its own result or failure exactly as unfused.
void MatmulOptimization::execute(ExecutionContext& context) {
  const core::OpDesc& product = context.op(0);
  core::Failure failure;
  std::array<backends::TensorHandle, 2> operands = product_operands(context, product, &failure);
  boost::container::small_vector<backends::ProductStep, backends::kMaxProductSteps> steps;
  for (const MatmulStep& s : steps_) {
    if (failure) break;
    const core::OpDesc& op = context.op(s.op);
    backends::ProductStep& step = steps.emplace_back();
    step.op = &op;
    step.value_slot = s.value_slot;
    if (op.inputs.size() == 2)
      step.operand =
          context.handle(op.inputs[static_cast<std::size_t>(1 - s.value_slot)].id, &failure);
  }
  if (failure) {
    run_one_by_one(context);
    return;
  }
  backends::TensorHandle result;
  const bool applied = context.backend().execute_product(product, operands, steps, result);
  if (!applied) {  // the product alone: the epilogue reads it as the ops after it would
    const core::TensorId p = product.outputs[0].id;
    context.set_handle(p, std::move(result));
    OffsetContext after(context, 1);
    try {
      epilogue_->execute(after);
    } catch (...) {
      context.erase(p);  // as before: the caller runs every op one by one
      throw;
    }
  }
  // The existing tensors whose last use the product was.
  erase_last_uses(context, product);
  if (!applied) return;
  // The steps' operands whose last use this was; the chain's own values were never stored.
  for (const backends::ProductStep& step : steps)
    if (step.op->inputs.size() == 2) {
      const core::TensorDesc& in = step.op->inputs[static_cast<std::size_t>(1 - step.value_slot)];
      if (in.status == core::TensorStatus::kReadWrite) context.erase(in.id);
    }
  context.set_handle(steps.back().op->outputs[0].id, std::move(result));
}

}  // namespace streamfuse::fusion
