#include "fusion/builders/matmul/codec.h"

#include "fusion/builders/matmul/builder.h"
#include "fusion/builders/replayed_codec.h"

namespace streamfuse::fusion {
namespace {

std::shared_ptr<Optimization> decode(cache::InArchive& in, std::span<const core::OpDesc> ops) {
  MatmulBuilder builder;
  return replayed_codec::decode(in, ops, builder, "matmul", "a product and steps");
}

}  // namespace

const OptimizationCodec kMatmulCodec{"matmul", &replayed_codec::encode, &decode};

}  // namespace streamfuse::fusion
