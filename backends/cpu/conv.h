// 2-D convolutions on the CPU through oneDNN: a primitive per (dtype, shapes, window, thread
// count), created once and cached like the matmul's (onednn_support.h).
#pragma once

#include <cstddef>
#include <memory>

#include "core/ir.h"
#include "streamfuse/dtype.h"
#include "streamfuse/shape.h"

namespace streamfuse::backends::cpu {

// The shapes and window of one convolution: x [N, C, H, W], w [O, C / groups, kH, kW] into
// out [N, O, OH, OW] (core::window_result_shape), all dense row-major of one float dtype.
struct ConvProblem {
  DType dtype = kF32;
  Shape x, w, out;
  core::Window window;
};

class ConvEngine {
 public:
  // The most primitives kept; the least recently used one goes first.
  static constexpr std::size_t kMaxCachedPrimitives = 256;

  ConvEngine();
  ~ConvEngine();
  ConvEngine(const ConvEngine&) = delete;
  ConvEngine& operator=(const ConvEngine&) = delete;

  // out = conv2d(x, w) (cross-correlation, zero padding), accumulated in f32; f16 and bf16 run
  // natively where the CPU has a kernel for them, else through f32 copies (the result rounded
  // to nearest even). Thread-safe. Throws ShapeError when `p` is not a convolution's shapes,
  // Error when oneDNN fails. Returns true when this is the process's first run of the primitive,
  // whether that run or prepare() created it.
  bool run(const ConvProblem& p, const void* x, const void* w, void* out, int num_threads);
  // Creates the primitive run() would use, unless it exists. Returns false where run() uses none
  // (empty problems).
  bool prepare(const ConvProblem& p, int num_threads);

  std::size_t cached_primitives() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace streamfuse::backends::cpu
