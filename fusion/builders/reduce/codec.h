// The persistence of ReduceOptimization: its tensors and its one kernel (a traced block with a
// reduction anchor), checked on decoding like the element-wise kind's.
#pragma once

#include "fusion/optimization_codec.h"

namespace streamfuse::fusion {

extern const OptimizationCodec kReduceCodec;

}  // namespace streamfuse::fusion
