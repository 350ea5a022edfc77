// Recording, host copies and transfers between devices, for the API: through the device's
// streams and the cross-stream protocol (stream/cross_stream.h).
#include <string>
#include <utility>
#include <vector>

#include "backends/borrowed_storage.h"
#include "backends/views.h"
#include "runtime/device_runtime.h"
#include "runtime/runtime.h"
#include "stream/cross_stream.h"
#include "stream/stream.h"
#include "stream/trace_capture.h"
#include "streamfuse/error.h"

namespace streamfuse::runtime {
namespace {

// The scope of this thread's stream on `streams`' device: work queued on a device that queues
// (a host copy) goes to that stream.
backends::StreamId this_threads_stream_id(stream::DeviceStreams& streams) {
  const stream::Stream* s = streams.current();
  return s ? s->id() : 0;
}

}  // namespace

stream::TensorNode* record(Device device, core::OpKind kind,
                           std::span<stream::TensorNode* const> operands, const Shape& shape,
                           DType dtype, const core::OpAttrs& attrs,
                           std::span<const Scalar> scalars) {
  // An operand's node knows its device's streams: no registry lookup on the per-op path.
  stream::DeviceStreams& streams =
      operands.empty() ? DeviceRuntime::get(device).streams() : *operands[0]->streams;
  return stream::record_op(streams, kind, operands, shape, dtype, attrs, scalars);
}

stream::TensorNode* from_host(Device device, const void* data, DType dtype, const Shape& shape) {
  stream::DeviceStreams& streams = DeviceRuntime::get(device).streams();
  const backends::StreamScope scope(this_threads_stream_id(streams));
  return stream::materialize(streams, streams.backend().from_host(data, dtype, shape), shape,
                             dtype);
}

stream::TensorNode* borrow_host(const void* data, DType dtype, const Shape& shape,
                                std::shared_ptr<const void> lender) {
  stream::DeviceStreams& streams = DeviceRuntime::get(Device::cpu()).streams();
  const std::size_t bytes = static_cast<std::size_t>(shape.numel()) * element_size(dtype);
  return stream::materialize(
      streams, backends::borrow_host_memory(data, bytes, shape, std::move(lender)), shape, dtype);
}

stream::TensorNode* transfer(const stream::TensorNode& n, Device device) {
  stream::DeviceStreams& target = DeviceRuntime::get(device).streams();  // DeviceError: not there
  // A copy between devices is a sync point of the source: its value is read, then placed on the
  // target as a tensor no op makes.
  stream::note_host_read();
  core::Failure failure;
  const backends::TensorHandle h = stream::value_of(n, &failure);
  if (failure)
    throw Error("to: this tensor's value could not be computed, so it cannot be copied to " +
                device.to_string() + ": " + *failure);
  backends::Backend& source = n.streams->backend();
  const backends::StreamId home = stream::home_stream(n);
  if (device.is_cpu()) {  // straight into the new tensor's host memory
    backends::TensorHandle out = target.backend().allocate(n.shape, n.dtype);
    const backends::StreamScope scope(home);
    source.to_host(h, n.dtype, n.shape, out.storage.data());
    return stream::materialize(target, std::move(out), n.shape, n.dtype);
  }
  if (n.device.is_cpu() && backends::is_contiguous(h, n.shape)) {  // host memory already
    const backends::StreamScope scope(this_threads_stream_id(target));
    return stream::materialize(
        target, target.backend().from_host(backends::element_ptr(h, n.dtype), n.dtype, n.shape),
        n.shape, n.dtype);
  }
  std::vector<char> staged(static_cast<std::size_t>(n.shape.numel()) * element_size(n.dtype));
  {
    const backends::StreamScope scope(home);
    source.to_host(h, n.dtype, n.shape, staged.data());
  }
  const backends::StreamScope scope(this_threads_stream_id(target));
  return stream::materialize(target, target.backend().from_host(staged.data(), n.dtype, n.shape),
                             n.shape, n.dtype);
}

void to_host(const stream::TensorNode& node, void* dst, std::string_view caller) {
  stream::note_host_read();
  core::Failure failure;
  const backends::TensorHandle h = stream::value_of(node, &failure);
  if (failure)
    throw Error(std::string(caller) + ": this tensor's value could not be computed: " + *failure);
  // The copy waits for the work of the stream that made the value (on a device that queues).
  const backends::StreamScope scope(stream::home_stream(node));
  node.streams->backend().to_host(h, node.dtype, node.shape, dst);
}

}  // namespace streamfuse::runtime
