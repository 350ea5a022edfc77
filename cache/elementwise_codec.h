// The persistence of ElementwiseOptimization (fusion/builders): its tensors, and per kernel the
// fused program and where its operands and scalars come from in the segment.
#pragma once

#include "cache/plan_codec.h"

namespace streamfuse::cache {

extern const OptimizationCodec kElementwiseCodec;

}  // namespace streamfuse::cache
