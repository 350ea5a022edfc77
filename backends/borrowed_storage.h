// Host memory the library reads without owning it (from_blob's zero-copy form: weights mapped
// from a file, a caller's buffer).
#pragma once

#include <cstddef>
#include <memory>

#include "backends/backend.h"

namespace streamfuse::backends {

// A contiguous handle of `shape` over `bytes` bytes at `data`, which `lender` (not null) keeps
// alive: the block holds a reference to it until the last tensor or view of the memory goes.
// The memory is never written in place (StorageRef::may_overwrite is false for it): ops that
// could reuse an input buffer write new memory instead.
TensorHandle borrow_host_memory(const void* data, std::size_t bytes, const Shape& shape,
                                std::shared_ptr<const void> lender);

}  // namespace streamfuse::backends
