#include "stream/queue.h"

namespace streamfuse::stream {

void OperationQueue::push(OpDesc&& op) {
  if (size_ == global_.size()) {
    global_.emplace_back();
    relative_.emplace_back();
  }
  converter_.convert(op, relative_[size_]);
  global_[size_] = std::move(op);
  ++size_;
}

void OperationQueue::clear() {
  size_ = 0;
  converter_.reset();
}

}  // namespace streamfuse::stream
