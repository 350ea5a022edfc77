// The shapes of a reduction's per-row values, in relative form (size ids; 0 is size 1): the
// builder takes ops of these shapes as per-row code, the codec checks per-row outputs with it.
#pragma once

#include <algorithm>

#include "core/ir.h"
#include "streamfuse/shape.h"

namespace streamfuse::fusion {

// Whether `out` is `shape` reduced along `axis` (core::kAllAxes: every one): with the axis of
// size 1 (keepdim) or without it.
inline bool is_reduced_shape(const Shape& out, const Shape& shape, int axis) {
  if (axis == core::kAllAxes)
    return (out.rank() == 0 || out.rank() == shape.rank()) &&
           std::all_of(out.begin(), out.end(), [](std::int64_t d) { return d == 0; });
  if (out.rank() == shape.rank()) {
    for (int d = 0; d < shape.rank(); ++d)
      if (out[d] != (d == axis ? 0 : shape[d])) return false;
    return true;
  }
  if (out.rank() + 1 != shape.rank()) return false;
  for (int d = 0, e = 0; d < shape.rank(); ++d)
    if (d != axis && out[e++] != shape[d]) return false;
  return true;
}

}  // namespace streamfuse::fusion
