// The persistence of MatmulOptimization: only how many ops it covers. The decoder replays
// MatmulBuilder over the plan's ops and requires it to take exactly those, so a decoded plan is
// one the builder would have made.
#pragma once

#include "fusion/optimization_codec.h"

namespace streamfuse::fusion {

extern const OptimizationCodec kMatmulCodec;

}  // namespace streamfuse::fusion
