// The persistence of MatmulOptimization (fusion/builders/replayed_codec.h): only how many ops it
// covers; the decoder replays MatmulBuilder over the plan's ops.
#pragma once

#include "fusion/optimization_codec.h"

namespace streamfuse::fusion {

extern const OptimizationCodec kMatmulCodec;

}  // namespace streamfuse::fusion
