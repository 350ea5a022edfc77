// The ops a stream has recorded and not yet run, in both forms.
#pragma once

#include <cstddef>
#include <vector>

#include "core/ir.h"
#include "core/relative.h"
#include "fusion/segment.h"

namespace streamfuse::stream {

// Holds each op as given (global ids, real sizes, scalar values: what runs) and, for the segment
// that starts at the head, in relative form (what plans match). Relative forms are made on
// demand, in order, once per segment: when the head runs and a new segment starts, only the ops
// the policy then looks at are renumbered, so the work stays proportional to the ops recorded.
// Storage is reused: steady-state pushes allocate nothing.
class OperationQueue final : public fusion::SegmentQueue {
 public:
  // Appends `op`.
  void push(core::OpDesc&& op);
  std::size_t size() const override { return size_; }
  bool empty() const { return size_ == 0; }
  // The i-th op from the head, as recorded.
  const core::OpDesc& global(std::size_t i) const override { return global_[head_ + i]; }
  // The i-th op from the head in the relative form of the segment starting at the head.
  const core::OpDesc& relative(std::size_t i) const override;
  // The first n ops ran: drops them; the next op starts a new segment.
  void drain_front(std::size_t n) override;
  // Drops every op.
  void clear() { drain_front(size_); }

 private:
  std::vector<core::OpDesc> global_;  // live in [head_, head_ + size_); the rest kept for storage
  std::size_t head_ = 0;
  std::size_t size_ = 0;
  mutable std::vector<core::OpDesc> relative_;  // [0, relative_count_) made for the current segment
  mutable std::size_t relative_count_ = 0;
  mutable core::RelativeConverter converter_;
};

}  // namespace streamfuse::stream
