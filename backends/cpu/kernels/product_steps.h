// The steps after a product of the library's own kernels (DotRowsStep: bias and residual adds,
// scales), applied to each result as it is stored. Included by the per-ISA kernel sources, inside
// their namespace.
#pragma once

#include <cstdint>

#include "backends/cpu/kernels/isa_namespace.h"
#include "backends/cpu/kernels/kernels.h"

namespace streamfuse::backends::cpu::SF_ISA_NS {

// `v` after the `num_steps` steps, for result `i` of vector (or weight row) `vec` of matrix
// `batch`. One statement per step: the kernels build with -ffp-contract=off, so each rounds once,
// as the element-wise op does.
inline float apply_steps(const DotRowsStep* steps, int num_steps, float v, std::int64_t batch,
                         std::int64_t vec, std::int64_t i) {
  for (int s = 0; s < num_steps; ++s) {
    const DotRowsStep& step = steps[s];
    const float x = step.data[(step.batch_offsets ? step.batch_offsets[batch] : 0) +
                              vec * step.vec_stride + i * step.stride];
    switch (step.op) {
      case 0:
        v = v + x;
        break;
      case 1:
        v = v - x;
        break;
      case 2:
        v = v * x;
        break;
      default:
        v = v / x;
        break;
    }
  }
  return v;
}

namespace product_steps {

// out[c] = out[c] <op> x[c * stride] for c < n; stride 0 and 1 get loops of their own so that they
// vectorize. Each result rounds once per step, as apply_steps.
template <class Op>
void apply_op(float* __restrict out, const float* __restrict x, std::int64_t stride, std::int64_t n,
              Op op) {
  if (stride == 0) {
    const float value = *x;
    for (std::int64_t c = 0; c < n; ++c) out[c] = op(out[c], value);
  } else if (stride == 1) {
    for (std::int64_t c = 0; c < n; ++c) out[c] = op(out[c], x[c]);
  } else {
    for (std::int64_t c = 0; c < n; ++c) out[c] = op(out[c], x[c * stride]);
  }
}

}  // namespace product_steps

// apply_steps over results [c0, c0 + n) of vector (or row) `vec` of matrix `batch`, stored at out:
// each step over the whole run before the next, the same roundings.
inline void apply_steps_to_run(const DotRowsStep* steps, int num_steps, float* out, std::int64_t n,
                               std::int64_t batch, std::int64_t vec, std::int64_t c0) {
  for (int s = 0; s < num_steps; ++s) {
    const DotRowsStep& step = steps[s];
    const float* x = step.data + (step.batch_offsets ? step.batch_offsets[batch] : 0) +
                     vec * step.vec_stride + c0 * step.stride;
    switch (step.op) {
      case 0:
        product_steps::apply_op(out, x, step.stride, n, [](float v, float y) { return v + y; });
        break;
      case 1:
        product_steps::apply_op(out, x, step.stride, n, [](float v, float y) { return v - y; });
        break;
      case 2:
        product_steps::apply_op(out, x, step.stride, n, [](float v, float y) { return v * y; });
        break;
      default:
        product_steps::apply_op(out, x, step.stride, n, [](float v, float y) { return v / y; });
        break;
    }
  }
}

}  // namespace streamfuse::backends::cpu::SF_ISA_NS
