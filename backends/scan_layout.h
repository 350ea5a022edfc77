// What the kernels of scans (core/ir.h: Cumsum, Argsort) need on every device: the lines along
// the axis, and the order argsort sorts in.
#pragma once

#include <cstdint>

#include "core/ir.h"

namespace streamfuse::backends {

// A contiguous tensor seen as outer x size x inner elements: the line (o, i) is the `size`
// elements o * size * inner + i + k * inner, k along the axis.
struct ScanLayout {
  std::int64_t outer = 1, size = 1, inner = 1;
  std::int64_t lines() const { return outer * inner; }
  // The first element of line `line` (o * inner + i); its k-th is first + k * inner.
  std::int64_t first(std::int64_t line) const { return line / inner * size * inner + line % inner; }
};
ScanLayout scan_layout(const Shape& shape, int axis);

// Whether a sorts strictly before b in an ascending sort: NaN after every number, -0 equal to
// +0 (a stable sort keeps their order), as PyTorch's sort. A descending sort puts b's test first.
inline bool sorts_before(double a, double b) { return a == a && (b != b || a < b); }
inline bool sorts_before(std::int64_t a, std::int64_t b) { return a < b; }

}  // namespace streamfuse::backends
