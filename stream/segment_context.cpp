#include "stream/segment_context.h"

#include "stream/device_streams.h"
#include "stream/execute_op.h"

namespace streamfuse::stream {

void DeviceContext::run_operation(std::size_t i) {
  execute_op(op(i), *device_.handles, *device_.backend);
}

backends::TensorHandle DeviceContext::handle(core::TensorId id, core::Failure* failure) {
  return device_.handles->get(id, failure);
}

void DeviceContext::set_handle(core::TensorId id, backends::TensorHandle h) {
  device_.handles->insert(id, std::move(h));
}

void DeviceContext::set_failed(core::TensorId id, core::Failure why) {
  device_.handles->mark_failed(id, std::move(why));
}

void DeviceContext::erase(core::TensorId id) { device_.handles->erase(id); }

backends::Backend& DeviceContext::backend() { return *device_.backend; }

jit::KernelLauncher& DeviceContext::launcher() { return *device_.launcher; }

}  // namespace streamfuse::stream
