#include "fusion/builders/elementwise/codec.h"

#include <string>
#include <vector>

#include "fusion/builders/elementwise/optimization.h"
#include "fusion/builders/traced_codec.h"

namespace streamfuse::fusion {
namespace {

// What ElementwiseBuilder takes.
bool takes(core::OpKind kind) {
  return kind == core::OpKind::kDrop || kind == core::OpKind::kFull ||
         kind == core::OpKind::kIndexSelect || kind == core::OpKind::kGather ||
         core::is_elementwise(kind);
}

void encode(cache::OutArchive& out, const Optimization& optimization) {
  const auto& o = dynamic_cast<const ElementwiseOptimization&>(optimization);
  out(static_cast<std::uint64_t>(o.len()));
  traced_codec::put_tensors(out, o.tensors());
  out(static_cast<std::uint32_t>(o.kernels().size()));
  for (const ElementwiseKernel& k : o.kernels()) traced_codec::put_block(out, k);
}

std::shared_ptr<Optimization> decode(cache::InArchive& in, std::span<const core::OpDesc> ops) {
  std::uint64_t len = 0;
  in(len);
  if (len != ops.size())
    cache::bad_payload("elementwise optimization covers " + std::to_string(len) +
                       " of the plan's " + std::to_string(ops.size()) + " ops");
  std::vector<TracedTensor> tensors = traced_codec::get_tensors(in, ops);
  // Outputs have the iteration shape.
  const auto fits = [](const jit::ProgramOutput& o, const Shape& out, const Shape& shape) {
    return !o.per_row && out == shape;
  };
  std::vector<ElementwiseKernel> kernels;
  for (std::uint32_t n = cache::get_size(in, cache::kMaxItems, "kernel"); n > 0; --n) {
    kernels.push_back(traced_codec::get_block(in, ops, tensors, fits));
    if (kernels.back().program.anchor.kind != jit::AnchorKind::kNone)
      cache::bad_payload("an elementwise kernel with an anchor");
  }
  traced_codec::check_dataflow(ops, tensors, kernels, &takes, "elementwise");
  return std::make_shared<ElementwiseOptimization>(static_cast<std::size_t>(len),
                                                   std::move(tensors), std::move(kernels));
}

}  // namespace

const OptimizationCodec kElementwiseCodec{"elementwise", &encode, &decode};

}  // namespace streamfuse::fusion
