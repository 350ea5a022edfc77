#include "backends/scan_layout.h"

namespace streamfuse::backends {

ScanLayout scan_layout(const Shape& shape, int axis) {
  ScanLayout l;
  for (int d = 0; d < axis; ++d) l.outer *= shape[d];
  l.size = shape[axis];
  for (int d = axis + 1; d < shape.rank(); ++d) l.inner *= shape[d];
  return l;
}

}  // namespace streamfuse::backends
