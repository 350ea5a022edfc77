// Device memory blocks with an intrusive reference count, shared by a tensor and its views.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

namespace streamfuse::backends {

class CachingAllocator;

// One allocation. Owned by its allocator; StorageRef counts the references to it and hands it
// back when the last one goes. Or memory the library borrows (from_blob's zero-copy form,
// backends/borrowed_storage.h): no allocator, `lender` kept alive until the last reference goes,
// and never written in place.
struct StorageBlock {
  void* data = nullptr;
  std::size_t bytes = 0;     // requested size
  std::size_t capacity = 0;  // size of the block as allocated (its size class)
  std::atomic<std::int32_t> refs{0};
  CachingAllocator* owner = nullptr;
  // Made ahead of need (CachingAllocator::reserve) from pages that read as zeros, and not handed
  // out since: a zero-filled tensor may take it without writing it.
  bool zero = false;
  // What keeps borrowed memory alive: set exactly for borrowed blocks (borrowed()), which have no
  // owner and are deleted, with their lender's reference, by release_block.
  std::shared_ptr<const void> lender;
  bool borrowed() const { return lender != nullptr; }
  // The backend's queues (CUDA streams) whose work used the block, one bit each: what work
  // handing the block out again must wait for (backends/cuda/stream_set.h). Bookkeeping, not
  // the block's value: kept through the const references views hand out.
  mutable std::atomic<std::uint64_t> users{0};
  // Intrusive links while the block is cached: the free list of its size class and the
  // allocator's least-recently-freed list, both doubly linked.
  StorageBlock* next_free = nullptr;
  StorageBlock* prev_free = nullptr;
  StorageBlock* lru_prev = nullptr;
  StorageBlock* lru_next = nullptr;
};

// Returns `block` to its allocator (or drops a borrowed one); called when the last StorageRef
// goes.
void release_block(StorageBlock* block) noexcept;

class StorageRef {
 public:
  StorageRef() = default;
  // Adopts a block whose count the allocator set to 1.
  explicit StorageRef(StorageBlock* adopted) : block_(adopted) {}
  StorageRef(const StorageRef& o) : block_(o.block_) {
    if (block_) block_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  StorageRef(StorageRef&& o) noexcept : block_(std::exchange(o.block_, nullptr)) {}
  StorageRef& operator=(StorageRef o) noexcept {
    std::swap(block_, o.block_);
    return *this;
  }
  ~StorageRef() { reset(); }

  void reset() noexcept {
    if (block_ && block_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) release_block(block_);
    block_ = nullptr;
  }
  explicit operator bool() const { return block_ != nullptr; }
  void* data() const { return block_->data; }
  std::size_t bytes() const { return block_->bytes; }
  // True when the block may be overwritten in place by whoever holds `holders` of its
  // references: nothing else (no other tensor or view) shares it, and it is the library's own
  // memory, not borrowed (the caller's, perhaps a read-only mapping of a file).
  bool may_overwrite(std::int32_t holders = 1) const {
    return block_ && !block_->borrowed() && use_count() == holders;
  }
  // References to the block (tensors, views, and copies held while an op runs).
  std::int32_t use_count() const {
    return block_ ? block_->refs.load(std::memory_order_acquire) : 0;
  }
  const StorageBlock* block() const { return block_; }

 private:
  StorageBlock* block_ = nullptr;
};

}  // namespace streamfuse::backends
