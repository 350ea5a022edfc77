// The queued ops of a stream as fusion sees them. Declared here, implemented by stream's
// OperationQueue.
#pragma once

#include <cstddef>

#include "core/ir.h"

namespace streamfuse::fusion {

class SegmentQueue {
 public:
  virtual ~SegmentQueue() = default;
  virtual std::size_t size() const = 0;
  // The i-th op from the head: as recorded, and in the relative form of the segment that starts
  // at the head.
  virtual const core::OpDesc& global(std::size_t i) const = 0;
  virtual const core::OpDesc& relative(std::size_t i) const = 0;
  // The first n ops ran: the next op starts a new segment.
  virtual void drain_front(std::size_t n) = 0;
};

}  // namespace streamfuse::fusion
