// The ops a stream has recorded and not yet run, in both forms.
#pragma once

#include <cstddef>
#include <vector>

#include "stream/ir.h"
#include "stream/relative.h"

namespace streamfuse::stream {

// Holds each op twice: as given (global ids, real sizes, scalar values: what runs) and in
// relative form (what plans match). Storage is reused: steady-state pushes allocate nothing.
class OperationQueue {
 public:
  // Appends `op` and its relative form.
  void push(OpDesc&& op);
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const OpDesc& global(std::size_t i) const { return global_[i]; }
  const OpDesc& relative(std::size_t i) const { return relative_[i]; }
  // Forgets every op; the next op starts a new segment.
  void clear();

 private:
  std::vector<OpDesc> global_;  // [0, size_) live; the rest kept for their storage
  std::vector<OpDesc> relative_;
  std::size_t size_ = 0;
  RelativeConverter converter_;
};

}  // namespace streamfuse::stream
