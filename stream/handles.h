// The handle container of a device: TensorId -> where its value is. Shared by the device's
// streams, so every access locks.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include <boost/unordered/unordered_flat_map.hpp>

#include "backends/backend.h"
#include "core/ir.h"

namespace streamfuse::stream {

class HandleContainer {
 public:
  void insert(core::TensorId id, backends::TensorHandle handle);
  // Copies the handles of op.inputs into `out` under one lock; a ReadWrite input's entry is
  // removed (the op owns it now). Returns the failure of the first failed input, if any.
  // Throws Error if an input has no entry (an internal ordering bug).
  core::Failure gather(const core::OpDesc& op, std::span<backends::TensorHandle> out);
  // The handle of `id`, or its failure; throws Error if it has neither.
  backends::TensorHandle get(core::TensorId id, core::Failure* failure) const;
  // Forgets `id` (value or failure).
  void erase(core::TensorId id);
  // Records that `id` could not be computed.
  void mark_failed(core::TensorId id, core::Failure why);

  std::size_t size() const;

 private:
  mutable std::mutex mutex_;
  boost::unordered_flat_map<core::TensorId, backends::TensorHandle> handles_;
  boost::unordered_flat_map<core::TensorId, core::Failure> failures_;
};

}  // namespace streamfuse::stream
