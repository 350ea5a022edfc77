// What fusion needs from the stream that runs a segment: the segment's ops as recorded, the
// device's tensor handles, and the eager path. Declared here, implemented by stream/, the layer
// above (fusion includes none of stream's headers).
#pragma once

#include <cstddef>

#include "backends/backend.h"
#include "core/ir.h"
#include "jit/launcher.h"

namespace streamfuse::fusion {

class ExecutionContext {
 public:
  virtual ~ExecutionContext() = default;

  // The global form (real ids, sizes and scalar values) of the segment's i-th op.
  virtual const core::OpDesc& op(std::size_t i) const = 0;
  // Runs the segment's i-th op on its own through the backend (failures are stored with its
  // outputs, never thrown).
  virtual void run_operation(std::size_t i) = 0;

  // The handle of tensor `id`; on a failed tensor, sets *failure and returns an empty handle.
  virtual backends::TensorHandle handle(core::TensorId id, core::Failure* failure) = 0;
  // Publishes a value, or a failure, for `id`.
  virtual void set_handle(core::TensorId id, backends::TensorHandle h) = 0;
  virtual void set_failed(core::TensorId id, core::Failure why) = 0;
  // Forgets `id` (its last use ran).
  virtual void erase(core::TensorId id) = 0;

  virtual backends::Backend& backend() = 0;
  // Runs fused programs on this device.
  virtual jit::KernelLauncher& launcher() = 0;
};

}  // namespace streamfuse::fusion
