#include "stream/queue.h"

#include <utility>

namespace streamfuse::stream {

void OperationQueue::push(core::OpDesc&& op) {
  if (head_ + size_ == global_.size()) {
    if (head_ > 0 && head_ >= size_) {  // reuse the drained front: amortized O(1) per op
      for (std::size_t i = 0; i < size_; ++i) std::swap(global_[i], global_[head_ + i]);
      head_ = 0;
    } else {
      global_.emplace_back();
    }
  }
  global_[head_ + size_] = std::move(op);
  ++size_;
}

const core::OpDesc& OperationQueue::relative(std::size_t i) const {
  while (relative_count_ <= i) {
    if (relative_count_ == relative_.size()) relative_.emplace_back();
    converter_.convert(global(relative_count_), relative_[relative_count_]);
    ++relative_count_;
  }
  return relative_[i];
}

void OperationQueue::drain_front(std::size_t n) {
  head_ += n;
  size_ -= n;
  if (size_ == 0) head_ = 0;
  // The converter numbers the segment's ops from its first: a new segment starts it over. Ops
  // that ran on their own were never converted (a view, a drop), and leave nothing to reset.
  if (relative_count_ > 0) converter_.reset();
  relative_count_ = 0;
}

}  // namespace streamfuse::stream
