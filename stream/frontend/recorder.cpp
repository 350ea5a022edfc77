#include "stream/frontend/recorder.h"

#include <boost/container/small_vector.hpp>

#include "stream/runtime.h"
#include "stream/stream.h"
#include "streamfuse/error.h"

namespace streamfuse::stream::frontend {

TensorNode& node_of(const Tensor& t, std::string_view op) {
  if (!t.defined())
    throw Error(std::string(op) +
                ": an operand is an undefined Tensor (default-constructed or "
                "moved from); assign it a value first");
  return *t.node();
}

std::string describe(const Tensor& t) {
  if (!t.defined()) return "undefined";
  return t.node()->shape.to_string() + " " + std::string(dtype_name(t.node()->dtype));
}

std::string describe_all(std::span<const Tensor> ts) {
  std::string s;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    if (i) s += i + 1 == ts.size() ? " and " : ", ";
    s += describe(ts[i]);
  }
  return s;
}

Device common_device(std::span<const Tensor> operands, std::string_view op) {
  Device d = node_of(operands[0], op).device;
  for (const Tensor& t : operands.subspan(1)) {
    if (node_of(t, op).device != d)
      throw DeviceError(std::string(op) + ": operands are on different devices (" + d.to_string() +
                        " and " + t.node()->device.to_string() + "); move one with .to(device)");
  }
  return d;
}

Tensor record(core::OpKind kind, std::span<Tensor> operands, const Shape& shape, DType dtype,
              Device device, const core::OpAttrs& attrs, std::span<const Scalar> scalars) {
  DeviceRuntime& rt = DeviceRuntime::get(device);
  Stream* stream = rt.current_stream();
  if (!stream)
    throw Error(std::string(op_name(kind)) + ": this thread is exiting; record ops before");
  const std::uint64_t seq = stream->next_seq();

  core::OpDesc op;
  op.kind = kind;
  op.attrs = attrs;
  op.scalars.assign(scalars.begin(), scalars.end());
  boost::container::small_vector<TensorNode*, 3> pins;
  boost::container::small_vector<TensorNode*, 3> consumed;
  for (Tensor& t : operands) {
    TensorNode* n = t.node();
    const bool last_use = n->refs.load(std::memory_order_acquire) == 1;
    if (last_use) consumed.push_back(n);
    op.inputs.push_back(core::TensorDesc{n->id, n->shape, n->dtype,
                                   last_use ? core::TensorStatus::kReadWrite : core::TensorStatus::kReadOnly});
    if (n->home == stream) {
      n->home_uses_through.store(seq + 1, std::memory_order_release);
      continue;
    }
    // A tensor of another stream: its value and that stream's queued uses of it come first.
    if (n->home && n->home->executed() < n->home_uses_through.load(std::memory_order_acquire))
      n->home->drain();
    // A device that queues work (CUDA) orders this stream's work after the home stream's, and
    // keeps the memory from being handed out before this stream is done with it.
    if (n->home && !device.is_cpu()) {
      core::Failure failure;
      const backends::TensorHandle h = rt.handles().get(n->id, &failure);
      rt.backend().share(h, n->home->id(), stream->id());
    }
    if (!last_use) {
      retain(n);
      pins.push_back(n);
    }
  }
  const core::TensorId id = rt.new_id();
  op.outputs.push_back(core::TensorDesc{id, shape, dtype, core::TensorStatus::kNotInit});
  Tensor result(new_node(rt, stream, seq + 1, id, shape, dtype));
  try {
    stream->record(std::move(op), pins, /*may_run=*/true);
  } catch (...) {
    for (TensorNode* n : pins) release(n);
    throw;
  }
  for (TensorNode* n : consumed) n->consumed = true;  // the op owns their values now
  return result;
}

Tensor materialized(DeviceRuntime& rt, backends::TensorHandle handle, const Shape& shape,
                    DType dtype) {
  Stream* s = rt.current_stream();
  const core::TensorId id = rt.new_id();
  rt.handles().insert(id, std::move(handle));
  return Tensor(new_node(rt, s, /*uses_through=*/0, id, shape, dtype));
}

void wait_for_value(const TensorNode& node) {
  if (node.home && node.home->executed() < node.home_uses_through.load(std::memory_order_acquire))
    node.home->drain();
}

}  // namespace streamfuse::stream::frontend
