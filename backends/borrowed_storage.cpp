#include "backends/borrowed_storage.h"

#include <utility>

namespace streamfuse::backends {

TensorHandle borrow_host_memory(const void* data, std::size_t bytes, const Shape& shape,
                                std::shared_ptr<const void> lender) {
  auto* block = new StorageBlock;
  // Kernels take a mutable pointer for every operand; a borrowed block is only ever read.
  block->data = const_cast<void*>(data);
  block->bytes = bytes;
  block->capacity = bytes;
  block->lender = std::move(lender);  // never null (from_blob requires an owner)
  block->refs.store(1, std::memory_order_relaxed);
  TensorHandle h;
  h.storage = StorageRef(block);
  h.strides = contiguous_strides(shape);
  return h;
}

}  // namespace streamfuse::backends
