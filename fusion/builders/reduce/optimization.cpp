#include "fusion/builders/reduce/optimization.h"

#include <vector>

#include <boost/container/small_vector.hpp>

#include "backends/backend.h"
#include "fusion/segment_tensors.h"
#include "jit/reduce_layout.h"

namespace streamfuse::fusion {
namespace {

struct Value {
  const core::TensorDesc* desc = nullptr;
  backends::TensorHandle handle;
  core::Failure failure;
};

}  // namespace

ReduceOptimization::ReduceOptimization(std::size_t len, std::vector<Tensor> tensors,
                                       TracedBlock kernel)
    : len_(len), tensors_(std::move(tensors)), kernel_(std::move(kernel)) {}

std::string ReduceOptimization::describe() const {
  const jit::FusedProgram& p = kernel_.program;
  std::string stages;
  for (const jit::ReduceStage& st : p.anchor.stages)
    stages += (stages.empty() ? "" : " ") + std::string(core::op_name(st.op));
  return "reduce: 1 kernel, " + std::to_string(p.anchor.stages.size()) + " stage(s) (" + stages +
         ") over " +
         (p.anchor.axis == core::kAllAxes ? std::string("all")
                                          : "axis " + std::to_string(p.anchor.axis)) +
         ", " + std::to_string(p.prologue.size() + p.epilogue.size()) + " instructions";
}

void ReduceOptimization::read_ahead(jit::KernelCache& kernels) const {
  kernels.read_ahead(kernel_.facts.hash, kernel_.program);
}

// All or nothing, as the element-wise optimization: outputs are allocated before the kernel
// runs and published after it; inputs are never written (nothing is lent).
void ReduceOptimization::execute(ExecutionContext& context) {
  // Inline for the tensors of most plans: a small plan's launch allocates nothing here.
  boost::container::small_vector<Value, 16> values(tensors_.size());
  for (std::size_t t = 0; t < tensors_.size(); ++t)
    values[t].desc = &desc_at(context, tensors_[t].source);
  const jit::FusedProgram& p = kernel_.program;
  const Shape& shape = desc_at(context, kernel_.shape_source).shape;
  // Per-row outputs are written as the reduced shape with the axis kept (of size 1): the same
  // memory as without it.
  Shape rows = shape;
  for (int d = 0; d < rows.rank(); ++d)
    if (p.anchor.axis == core::kAllAxes || d == p.anchor.axis) rows[d] = 1;

  boost::container::small_vector<jit::LaunchOperand, 8> ins, outs;
  boost::container::small_vector<backends::TensorHandle, 4> row_handles(kernel_.outputs.size());
  core::Failure failed;
  for (std::uint32_t t : kernel_.inputs) {
    Value& v = values[t];
    v.handle = context.handle(v.desc->id, &v.failure);
    if (v.failure && !failed) failed = v.failure;
    ins.push_back({&v.handle, v.desc->shape, v.desc->dtype});
  }
  // Whether the kernel suits these inputs; else the ops run one by one (nothing changed yet:
  // only handles read). A reduction of every element of a tensor read as it is needs the tensor
  // contiguous (else the eager kernel folds it run by run, an order the kernel does not follow);
  // along an axis, the kernel must walk memory by rows or by column tiles
  // (jit::reduce_walks_well): a layout that is neither would be read a cache line per element,
  // many times slower than unfused.
  if (!failed && !jit::reduce_walks_well(p, kernel_.facts.hash, shape, ins)) {
    for (std::size_t i = 0; i < len_; ++i) context.run_operation(i);
    return;
  }
  if (!failed && !kernel_.outputs.empty()) {  // nothing to compute when every result died
    for (std::size_t o = 0; o < kernel_.outputs.size(); ++o) {
      Value& v = values[kernel_.outputs[o]];
      v.handle = context.backend().allocate(v.desc->shape, v.desc->dtype);
      if (p.outputs[o].per_row) {
        row_handles[o] = v.handle;
        row_handles[o].strides = backends::contiguous_strides(rows);
        outs.push_back({&row_handles[o], rows, v.desc->dtype});
      } else {
        outs.push_back({&v.handle, shape, v.desc->dtype});
      }
    }
    boost::container::small_vector<std::int64_t, 8> scalars;
    for (std::size_t s = 0; s < kernel_.scalars.size(); ++s) {
      const Scalar& value = context.op(kernel_.scalars[s].op).scalars[kernel_.scalars[s].slot];
      scalars.push_back(jit::scalar_bits(p.scalars[s], value));
    }
    // While the kernel compiles, a launch the interpreter would run slower than the ops (a
    // large column walk) runs the ops instead; the outputs just allocated go back unused.
    if (context.launcher().ops_are_faster(p, kernel_.facts, shape, ins, outs, scalars)) {
      for (std::size_t i = 0; i < len_; ++i) context.run_operation(i);
      return;
    }
    context.launcher().launch(p, kernel_.facts, shape, ins, outs, scalars);
  } else if (failed) {
    for (std::uint32_t t : kernel_.outputs) values[t].failure = failed;
  }

  for (std::size_t t = 0; t < tensors_.size(); ++t) {
    Value& v = values[t];
    if (tensors_[t].publish) {
      if (v.failure)
        context.set_failed(v.desc->id, v.failure);
      else
        context.set_handle(v.desc->id, std::move(v.handle));
    }
    if (tensors_[t].erase) context.erase(v.desc->id);
  }
}

}  // namespace streamfuse::fusion
