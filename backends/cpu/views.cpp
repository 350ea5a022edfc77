#include "backends/cpu/views.h"

#include "backends/backend.h"
#include "backends/views.h"

namespace streamfuse::backends::cpu {

Operand broadcast_operand(const TensorHandle& h, const Shape& shape, DType dtype,
                          const Shape& iterated) {
  return {element_ptr(h, dtype), dtype, broadcast_strides(shape, h.strides, iterated)};
}

}  // namespace streamfuse::backends::cpu
