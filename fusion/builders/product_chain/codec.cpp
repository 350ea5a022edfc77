#include "fusion/builders/product_chain/codec.h"

#include <string>

#include "fusion/builders/product_chain/builder.h"

namespace streamfuse::fusion {
namespace {

void encode(cache::OutArchive& out, const Optimization& optimization) {
  out(static_cast<std::uint64_t>(optimization.len()));
}

std::shared_ptr<Optimization> decode(cache::InArchive& in, std::span<const core::OpDesc> ops) {
  std::uint64_t len = 0;
  in(len);
  if (len != ops.size())
    cache::bad_payload("product chain covers " + std::to_string(len) + " of the plan's " +
                       std::to_string(ops.size()) + " ops");
  ProductChainBuilder builder;
  for (const core::OpDesc& op : ops) builder.register_op(op, op);
  if (builder.len() != ops.size())
    cache::bad_payload(
        "the plan's ops are not a product, a reduce kernel and a product the product chain "
        "builder takes (it takes " +
        std::to_string(builder.len()) + " of " + std::to_string(ops.size()) + ")");
  return std::shared_ptr<Optimization>(builder.build());
}

}  // namespace

const OptimizationCodec kProductChainCodec{"product_chain", &encode, &decode};

}  // namespace streamfuse::fusion
