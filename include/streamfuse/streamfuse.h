// streamfuse: eager tensor code, recorded into operation streams and run as fused kernels.
#pragma once

#include "streamfuse/compile.h"
#include "streamfuse/config.h"
#include "streamfuse/device.h"
#include "streamfuse/dtype.h"
#include "streamfuse/error.h"
#include "streamfuse/ops.h"
#include "streamfuse/plans.h"
#include "streamfuse/profiler.h"
#include "streamfuse/safetensors.h"
#include "streamfuse/shape.h"
#include "streamfuse/tensor.h"
