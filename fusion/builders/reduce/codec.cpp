#include "fusion/builders/reduce/codec.h"

#include <string>
#include <vector>

#include "fusion/builders/reduce/optimization.h"
#include "fusion/builders/reduce/reduced_shape.h"
#include "fusion/builders/traced_codec.h"

namespace streamfuse::fusion {
namespace {

// What ReduceBuilder takes.
bool takes(core::OpKind kind) {
  return kind == core::OpKind::kDrop || kind == core::OpKind::kFull || core::is_elementwise(kind) ||
         core::op_category(kind) == core::OpCategory::kReduce;
}

void encode(cache::OutArchive& out, const Optimization& optimization) {
  const auto& o = dynamic_cast<const ReduceOptimization&>(optimization);
  out(static_cast<std::uint64_t>(o.len()));
  traced_codec::put_tensors(out, o.tensors());
  traced_codec::put_block(out, o.kernel());
}

std::shared_ptr<Optimization> decode(cache::InArchive& in, std::span<const core::OpDesc> ops) {
  std::uint64_t len = 0;
  in(len);
  if (len != ops.size())
    cache::bad_payload("reduce optimization covers " + std::to_string(len) + " of the plan's " +
                       std::to_string(ops.size()) + " ops");
  std::vector<TracedTensor> tensors = traced_codec::get_tensors(in, ops);
  // Output shapes depend on the program's axis: checked below, once the program is read.
  std::vector<TracedBlock> blocks;
  blocks.push_back(traced_codec::get_block(
      in, ops, tensors,
      [](const jit::ProgramOutput&, const Shape&, const Shape&) { return true; }));
  TracedBlock& k = blocks.back();
  const jit::Anchor& anchor = k.program.anchor;
  const Shape& shape = traced_codec::tensor_at(ops, k.shape_source).shape;
  if (anchor.kind != jit::AnchorKind::kReduce)
    cache::bad_payload("a reduce kernel with a " + std::string(jit::anchor_kind_name(anchor.kind)) +
                       " anchor");
  // The launch cuts rows along the axis: it must be one of the shape's.
  if (anchor.axis != core::kAllAxes && (anchor.axis < 0 || anchor.axis >= shape.rank()))
    cache::bad_payload("reduction axis " + std::to_string(anchor.axis) + " of a rank " +
                       std::to_string(shape.rank()) + " shape");
  for (std::size_t o = 0; o < k.outputs.size(); ++o) {
    const Shape& out = traced_codec::tensor_at(ops, tensors[k.outputs[o]].source).shape;
    if (k.program.outputs[o].per_row ? !is_reduced_shape(out, shape, anchor.axis) : out != shape)
      cache::bad_payload("reduce kernel output " + std::to_string(o) + " has another shape");
    if (k.lend[o] != -1) cache::bad_payload("a reduce kernel lends an input");
  }
  traced_codec::check_dataflow(ops, tensors, blocks, &takes, "reduce");
  return std::make_shared<ReduceOptimization>(static_cast<std::size_t>(len), std::move(tensors),
                                              std::move(blocks.back()));
}

}  // namespace

const OptimizationCodec kReduceCodec{"reduce", &encode, &decode};

}  // namespace streamfuse::fusion
