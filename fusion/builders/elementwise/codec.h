// The persistence of ElementwiseOptimization (fusion/builders): its tensors, and per kernel the
// fused program and where its operands and scalars come from in the segment.
#pragma once

#include "fusion/optimization_codec.h"

namespace streamfuse::fusion {

extern const OptimizationCodec kElementwiseCodec;

}  // namespace streamfuse::fusion
