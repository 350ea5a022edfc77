// The shared state behind a Tensor handle, with an intrusive reference count. The last
// reference going away records the tensor's Drop.
#pragma once

#include <atomic>
#include <cstdint>

#include "core/ir.h"
#include "streamfuse/device.h"

namespace streamfuse::stream {

class DeviceStreams;
class Stream;

struct TensorNode {
  std::atomic<std::int32_t> refs{1};
  // Set when the tensor's last use was a ReadWrite operand: that op owns the value, no Drop.
  bool consumed = false;
  DType dtype = kF32;
  Device device;
  core::TensorId id = 0;
  Shape shape;
  DeviceStreams* streams = nullptr;  // of its device
  // The stream that made the tensor, and 1 + the number of the last op on that stream that made
  // or used it (0: none). Another stream that uses the tensor first drains `home` unless
  // home->executed() has passed that, so the value exists and no queued use on `home` can
  // outlive a Drop recorded elsewhere.
  Stream* home = nullptr;
  std::atomic<std::uint64_t> home_uses_through{0};
};

// A node with one reference. Nodes are recycled through a per-thread pool: steady-state ops
// allocate none.
TensorNode* new_node(DeviceStreams& streams, Stream* home, std::uint64_t uses_through,
                     core::TensorId id, const Shape& shape, DType dtype);
inline void retain(TensorNode* n) { n->refs.fetch_add(1, std::memory_order_relaxed); }
// Drops one reference; the last one records a Drop (unless consumed: stream/cross_stream.h) and
// frees the node.
void release(TensorNode* n) noexcept;

}  // namespace streamfuse::stream
