#include "stream/cross_stream.h"

#include <string>

#include <boost/container/small_vector.hpp>

#include "stream/stream.h"
#include "streamfuse/error.h"

namespace streamfuse::stream {

TensorNode* record_op(DeviceStreams& streams, core::OpKind kind,
                      std::span<TensorNode* const> operands, const Shape& shape, DType dtype,
                      const core::OpAttrs& attrs, std::span<const Scalar> scalars) {
  Stream* stream = streams.current();
  if (!stream)
    throw Error(std::string(op_name(kind)) + ": this thread is exiting; record ops before");
  const std::uint64_t seq = stream->next_seq();

  core::OpDesc op;
  op.kind = kind;
  op.attrs = attrs;
  op.scalars.assign(scalars.begin(), scalars.end());
  boost::container::small_vector<TensorNode*, 3> pins;
  boost::container::small_vector<TensorNode*, 3> consumed;
  for (TensorNode* n : operands) {
    const bool last_use = n->refs.load(std::memory_order_acquire) == 1;
    if (last_use) consumed.push_back(n);
    op.inputs.push_back(core::TensorDesc{
        n->id, n->shape, n->dtype,
        last_use ? core::TensorStatus::kReadWrite : core::TensorStatus::kReadOnly});
    if (n->home == stream) {
      n->home_uses_through.store(seq + 1, std::memory_order_release);
      continue;
    }
    read_from_other_stream(streams, *stream, *n);
    if (!last_use) {
      retain(n);
      pins.push_back(n);
    }
  }
  const core::TensorId id = streams.new_id();
  op.outputs.push_back(core::TensorDesc{id, shape, dtype, core::TensorStatus::kNotInit});
  TensorNode* result = new_node(streams, stream, seq + 1, id, shape, dtype);
  try {
    stream->record(std::move(op), pins, /*may_run=*/true);
  } catch (...) {
    for (TensorNode* n : pins) release(n);
    release(result);  // its op was not recorded: the Drop of an id nothing made is harmless
    throw;
  }
  for (TensorNode* n : consumed) n->consumed = true;  // the op owns their values now
  return result;
}

void read_from_other_stream(DeviceStreams& streams, Stream& stream, const TensorNode& n) {
  // Its value and the home stream's queued uses of it come first.
  if (n.home && n.home->executed() < n.home_uses_through.load(std::memory_order_acquire))
    n.home->drain();
  // A device that queues work (CUDA) orders this stream's work after the home stream's, and
  // keeps the memory from being handed out before this stream is done with it.
  if (n.home && !n.device.is_cpu()) {
    core::Failure failure;
    const backends::TensorHandle h = streams.handles().get(n.id, &failure);
    streams.backend().share(h, n.home->id(), stream.id());
  }
}

TensorNode* materialize(DeviceStreams& streams, backends::TensorHandle handle, const Shape& shape,
                        DType dtype) {
  Stream* s = streams.current();
  const core::TensorId id = streams.new_id();
  streams.handles().insert(id, std::move(handle));
  return new_node(streams, s, /*uses_through=*/0, id, shape, dtype);
}

void wait_for_value(const TensorNode& node) {
  if (node.home && node.home->executed() < node.home_uses_through.load(std::memory_order_acquire))
    node.home->drain();
}

backends::TensorHandle value_of(const TensorNode& node, core::Failure* failure) {
  wait_for_value(node);
  return node.streams->handles().get(node.id, failure);
}

backends::StreamId home_stream(const TensorNode& node) { return node.home ? node.home->id() : 0; }

void record_drop(TensorNode* n) {
  DeviceStreams& streams = *n->streams;
  Stream* current = streams.current();
  Stream* home = n->home;
  if (home && home != current &&
      home->executed() < n->home_uses_through.load(std::memory_order_acquire))
    home->drain();
  if (!current) {  // the thread is exiting and its streams are retired: drop at once
    streams.handles().erase(n->id);
    return;
  }
  core::OpDesc op;
  op.kind = core::OpKind::kDrop;
  op.inputs.push_back(core::TensorDesc{n->id, n->shape, n->dtype, core::TensorStatus::kReadWrite});
  current->record(std::move(op), {}, /*may_run=*/false);
}

}  // namespace streamfuse::stream
