#include "fusion/builders/product_chain/codec.h"

#include "fusion/builders/product_chain/builder.h"
#include "fusion/builders/replayed_codec.h"

namespace streamfuse::fusion {
namespace {

std::shared_ptr<Optimization> decode(cache::InArchive& in, std::span<const core::OpDesc> ops) {
  ProductChainBuilder builder;
  return replayed_codec::decode(in, ops, builder, "product chain",
                                "a product, a reduce kernel and a product");
}

}  // namespace

const OptimizationCodec kProductChainCodec{"product_chain", &replayed_codec::encode, &decode};

}  // namespace streamfuse::fusion
