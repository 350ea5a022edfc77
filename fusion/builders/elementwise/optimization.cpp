#include "fusion/builders/elementwise/optimization.h"

#include <algorithm>

#include <boost/container/small_vector.hpp>

#include "backends/backend.h"
#include "backends/index_layout.h"
#include "backends/views.h"
#include "core/log.h"
#include "fusion/segment_tensors.h"
#include "streamfuse/error.h"

namespace streamfuse::fusion {
namespace {

// A tensor's value during one run: taken from the context, or made by a kernel of this run.
struct Value {
  const core::TensorDesc* desc = nullptr;
  backends::TensorHandle handle;
  core::Failure failure;
  bool known = false;
};

// Per indexed read of `k`: the program outputs whose values depend on it (bit o for output o).
std::vector<std::uint64_t> outputs_of_reads(const ElementwiseKernel& k) {
  const jit::FusedProgram& p = k.program;
  std::vector<std::uint64_t> reads(static_cast<std::size_t>(p.num_registers), 0);  // per register
  // Bounds-checked: the state may be a decoder's to reject (tests encode such states).
  const auto valid = [&](std::int32_t reg) { return reg >= 0 && reg < p.num_registers; };
  for (const jit::Instruction& in : p.prologue) {
    if (!valid(in.out)) continue;
    std::uint64_t r = 0;
    for (std::int32_t a : in.args)
      if (valid(a)) r |= reads[static_cast<std::size_t>(a)];
    if (in.kind == jit::InstrKind::kLoadAt)
      for (std::size_t i = 0; i < k.indexed.size(); ++i)
        if (i < 64 && k.indexed[i].source == static_cast<std::uint32_t>(in.index))
          r |= std::uint64_t{1} << i;
    reads[static_cast<std::size_t>(in.out)] = r;
  }
  std::vector<std::uint64_t> outputs(k.indexed.size(), 0);
  for (std::size_t o = 0; o < p.outputs.size() && o < 64; ++o)
    for (std::size_t i = 0; i < k.indexed.size() && i < 64; ++i)
      if (valid(p.outputs[o].reg) && reads[static_cast<std::size_t>(p.outputs[o].reg)] >> i & 1)
        outputs[i] |= std::uint64_t{1} << o;
  return outputs;
}

// Why `op`'s indices (`indices`, on the device) are not all within its axis, as the unfused op
// says it, or empty.
std::string index_problem(ExecutionContext& context, const core::OpDesc& op,
                          const backends::TensorHandle& indices) {
  const core::TensorDesc& d = op.inputs[1];
  // Read in place where they are dense host memory (the CPU's), else copied here first.
  std::vector<std::uint64_t> host;
  const void* values = nullptr;
  if (context.backend().device().is_cpu() && backends::is_contiguous(indices, d.shape)) {
    values = backends::element_ptr(indices, d.dtype);
  } else {
    host.resize(static_cast<std::size_t>(d.shape.numel()) * element_size(d.dtype) / 8 + 1);
    context.backend().to_host(indices, d.dtype, d.shape, host.data());
    values = host.data();
  }
  try {
    backends::check_indices(op, values);
  } catch (const Error& e) {
    return std::string(e.what()) + " [while running " + core::to_string(op) + "]";
  }
  return {};
}

}  // namespace

ElementwiseOptimization::ElementwiseOptimization(std::size_t len, std::vector<Tensor> tensors,
                                                 std::vector<ElementwiseKernel> kernels)
    : len_(len), tensors_(std::move(tensors)), kernels_(std::move(kernels)) {
  for (const ElementwiseKernel& k : kernels_) {
    indexed_outputs_.push_back(outputs_of_reads(k));
    std::vector<char> strides(k.scalars.size(), 0);
    for (const IndexedRead& r : k.indexed)
      if (r.stride < strides.size()) strides[r.stride] = 1;
    stride_scalars_.push_back(std::move(strides));
  }
  std::vector<bool> read(tensors_.size(), false);
  for (const ElementwiseKernel& k : kernels_)
    for (std::uint32_t t : k.inputs) read[t] = true;
  for (std::uint32_t t = 0; t < tensors_.size(); ++t)
    if (tensors_[t].erase && !read[t]) erase_first_.push_back(t);
}

std::string ElementwiseOptimization::describe() const {
  std::size_t instructions = 0;
  for (const ElementwiseKernel& k : kernels_)
    instructions += k.program.prologue.size() + k.program.epilogue.size();
  return "elementwise: " + std::to_string(kernels_.size()) + " kernel(s), " +
         std::to_string(instructions) + " instructions";
}

// All or nothing: every allocation happens before the first kernel runs, and results are
// published only at the end, so an exception leaves the context as it was (inputs lent to an
// output are only written by kernels, and a launcher that may fail to build one is asked for
// every kernel before the first runs).
//
// Tensors whose last use is their drop in this segment and that no kernel reads (typically the
// previous iteration's result) are erased first, so their memory serves this run's outputs and
// a loop holds one result at a time. That keeps all-or-nothing: no op of the segment reads them,
// and running their drops again after a failure erases nothing.
void ElementwiseOptimization::execute(ExecutionContext& context) {
  // Inline for the tensors of most plans: a small plan's launch allocates nothing here.
  boost::container::small_vector<Value, 16> values(tensors_.size());
  for (std::size_t t = 0; t < tensors_.size(); ++t)
    values[t].desc = &desc_at(context, tensors_[t].source);
  for (std::uint32_t t : erase_first_) context.erase(values[t].desc->id);
  auto input = [&](std::uint32_t t) -> Value& {
    Value& v = values[t];
    if (!v.known) {
      v.handle = context.handle(v.desc->id, &v.failure);
      v.known = true;
    }
    return v;
  };

  // Plan every kernel's outputs: lent input buffers or new ones.
  bool lent = false;
  for (const ElementwiseKernel& k : kernels_) {
    for (std::size_t o = 0; o < k.outputs.size(); ++o) {
      Value& out = values[k.outputs[o]];
      out.known = true;
      if (k.lend[o] >= 0) {
        Value& in = input(k.inputs[static_cast<std::size_t>(k.lend[o])]);
        // Ours and the handle container's reference, nothing else: nobody can see the writes.
        if (!in.failure && in.handle.storage.may_overwrite(2) &&
            backends::is_contiguous(in.handle, in.desc->shape)) {
          context.backend().overwrite(in.handle);
          out.handle = in.handle;
          lent = true;
          continue;
        }
      }
      out.handle = context.backend().allocate(out.desc->shape, out.desc->dtype);
    }
  }

  // Each kernel's operands and scalars; a kernel with a failed input fails its outputs instead
  // (and their readers). Returns false for such a kernel.
  boost::container::small_vector<jit::LaunchOperand, 8> ins, outs;
  boost::container::small_vector<std::int64_t, 8> scalars;
  // Indexed reads' views (stable: reserved for every read before the first is made).
  std::vector<backends::TensorHandle> views;
  // `launching`: for the launch itself, which checks the indices of its reads first (the
  // require pass below builds kernels before earlier ones ran: their indices may not exist yet).
  auto arguments = [&](std::size_t ki, bool launching) {
    const ElementwiseKernel& k = kernels_[ki];
    core::Failure failed;
    ins.clear();
    for (std::uint32_t t : k.inputs) {
      Value& v = input(t);
      if (v.failure && !failed) failed = v.failure;
      ins.push_back({&v.handle, v.desc->shape, v.desc->dtype});
    }
    if (failed) {
      for (std::uint32_t t : k.outputs) values[t].failure = failed;
      return false;
    }
    outs.clear();
    for (std::uint32_t t : k.outputs)
      outs.push_back({&values[t].handle, values[t].desc->shape, values[t].desc->dtype});
    scalars.clear();
    for (std::size_t s = 0; s < k.scalars.size(); ++s) {
      if (stride_scalars_[ki][s]) {
        scalars.push_back(0);  // set with its read below
        continue;
      }
      const Scalar& value = context.op(k.scalars[s].op).scalars[k.scalars[s].slot];
      scalars.push_back(jit::scalar_bits(k.program.scalars[s], value));
    }
    views.clear();
    views.reserve(2 * k.indexed.size());
    const Shape& shape = desc_at(context, k.shape_source).shape;
    for (std::size_t i = 0; i < k.indexed.size(); ++i) {
      const IndexedRead& r = k.indexed[i];
      const core::OpDesc& op = context.op(r.op);
      const Value& source = values[k.inputs[r.source]];
      const Value& indices = values[k.inputs[r.indices]];
      backends::TensorHandle x = source.handle;
      x.strides = indexed_source_strides(op, source.handle.strides);
      std::int64_t stride = source.handle.strides[static_cast<std::size_t>(op.attrs.axis)];
      std::string why;
      if (launching) why = index_problem(context, op, indices.handle);
      if (!why.empty()) {
        // The results that read at these indices fail as the op would; the kernel still runs
        // for the others, reading one element of a buffer of its own for this read.
        core::Failure failure = std::make_shared<const std::string>(std::move(why));
        core::warn_once(*failure, "an op failed; reading its result will raise: " + *failure);
        for (std::size_t o = 0; o < k.outputs.size(); ++o)
          if (indexed_outputs_[ki][i] >> o & 1) values[k.outputs[o]].failure = failure;
        x = context.backend().allocate(Shape{1}, source.desc->dtype);
        x.strides = {};
        stride = 0;
      }
      views.push_back(x);
      ins[r.source] = {&views.back(), shape, source.desc->dtype};
      backends::TensorHandle at = indices.handle;
      at.strides = indexed_indices_strides(op, indices.handle.strides);
      views.push_back(at);
      ins[r.indices] = {&views.back(), shape, indices.desc->dtype};
      scalars[r.stride] = stride;
    }
    return true;
  };
  // A launcher without a fallback (CUDA) may fail to build a kernel. Where an earlier kernel
  // would already have written over a lent input, every kernel is made sure of first, so that a
  // failure leaves the inputs as they were (with one kernel, or nothing lent, the launch's own
  // failure changes nothing: no extra work on the common path).
  if (lent && kernels_.size() > 1 && context.launcher().may_fail()) {
    for (std::size_t ki = 0; ki < kernels_.size(); ++ki) {
      const ElementwiseKernel& k = kernels_[ki];
      if (arguments(ki, false))
        context.launcher().require(k.program, k.facts, desc_at(context, k.shape_source).shape, ins,
                                   outs, scalars);
    }
  }
  for (std::size_t ki = 0; ki < kernels_.size(); ++ki) {
    const ElementwiseKernel& k = kernels_[ki];
    if (!arguments(ki, true)) continue;
    context.launcher().launch(k.program, k.facts, desc_at(context, k.shape_source).shape, ins, outs,
                              scalars);
  }

  for (std::size_t t = 0; t < tensors_.size(); ++t) {
    Value& v = values[t];
    if (tensors_[t].publish) {
      if (v.failure)
        context.set_failed(v.desc->id, v.failure);
      else
        context.set_handle(v.desc->id, std::move(v.handle));
    }
    if (tensors_[t].erase && !std::binary_search(erase_first_.begin(), erase_first_.end(), t))
      context.erase(v.desc->id);
  }
}

void ElementwiseOptimization::read_ahead(jit::KernelCache& kernels) const {
  for (const ElementwiseKernel& k : kernels_) kernels.read_ahead(k.facts.hash, k.program);
}

}  // namespace streamfuse::fusion
