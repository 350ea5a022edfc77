// The product-chain kind's codec (fusion/builders/replayed_codec.h): the plan's ops, which the
// builder takes again on decoding (its middle kernel is the reduce builder's over the same ops,
// and comes out the same).
#pragma once

#include "fusion/optimization_codec.h"

namespace streamfuse::fusion {

extern const OptimizationCodec kProductChainCodec;

}  // namespace streamfuse::fusion
