// The multi-stream protocol, in one place: how an op recorded on this thread's stream reads
// tensors another stream made, how a tensor's value is waited for, and how a tensor's Drop is
// recorded wherever its last handle goes away.
//
// Each (device, thread) pair has its own stream. A tensor remembers its home stream and the last
// op there that made or used it (TensorNode::home_uses_through). Another stream that uses it
// first drains the home stream unless that op has run, so the value exists and no queued use on
// the home stream can outlive a Drop recorded elsewhere; on a device that queues work (CUDA) the
// backend also orders the reading stream after the home stream and keeps the memory from being
// reused before the reader is done. A read operand that is not the op's last use is pinned (one
// reference) until the op has run.
#pragma once

#include <span>

#include "backends/backend.h"
#include "core/ir.h"
#include "stream/device_streams.h"
#include "stream/tensor_node.h"

namespace streamfuse::stream {

// Records op `kind` reading `operands` (defined, all on the device of `streams`; validated) on
// this thread's stream, and returns its result's node (one reference) of `shape` and `dtype`. An
// operand held by one reference only (the caller's) is the op's last use: it is recorded as
// ReadWrite, its node marked consumed, and its value becomes the op's. Throws Error naming the
// op when the thread is exiting; nothing is recorded then.
TensorNode* record_op(DeviceStreams& streams, core::OpKind kind,
                      std::span<TensorNode* const> operands, const Shape& shape, DType dtype,
                      const core::OpAttrs& attrs, std::span<const Scalar> scalars);

// Makes `node` (of another stream than `stream`, or of none) readable by work on `stream`: its home
// stream drained if a queued op there makes or uses it, and on a device that queues work,
// `stream`'s work ordered after the home stream's.
void read_from_other_stream(DeviceStreams& streams, Stream& stream, const TensorNode& node);

// A new tensor of the device whose value is `handle` already (no op makes it, so no stream needs
// draining before it is used).
TensorNode* materialize(DeviceStreams& streams, backends::TensorHandle handle, const Shape& shape,
                        DType dtype);

// Makes sure the value of `node` exists: drains its home stream if needed.
void wait_for_value(const TensorNode& node);

// The value of `node` once it exists, or its failure. Work that reads it on a device that queues
// must run in the scope of home_stream(node).
backends::TensorHandle value_of(const TensorNode& node, core::Failure* failure);
backends::StreamId home_stream(const TensorNode& node);

// Records the Drop of a tensor whose last handle went away (release()). Never runs queued ops:
// this is called from destructors.
void record_drop(TensorNode* node);

}  // namespace streamfuse::stream
