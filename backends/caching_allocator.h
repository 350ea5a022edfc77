// A caching allocator over a device's memory: size classes, exact-class reuse of freed blocks, a
// bound on what it keeps (least recently freed goes first), and statistics.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "backends/storage.h"
#include "streamfuse/profiler.h"

namespace streamfuse::backends {

// Where the allocator gets memory from (host pages, cuMemAlloc, ...).
class MemorySource {
 public:
  virtual ~MemorySource() = default;
  // `bytes` (a size class, a multiple of 64), 64-byte aligned; nullptr when out of memory.
  virtual void* allocate(std::size_t bytes) = 0;
  // As allocate(); sets *zeroed when the block reads as zeros without being written (fresh
  // anonymous pages), so that the caller need not clear it. The default promises nothing.
  virtual void* allocate_zeroed(std::size_t bytes, bool* zeroed) {
    *zeroed = false;
    return allocate(bytes);
  }
  // A block made ahead of need (CachingAllocator::reserve): its pages mapped now, so that the
  // run that takes it does not fault them in. Sets *zeroed when it reads as zeros. The default
  // is allocate(), promising nothing.
  virtual void* allocate_ahead(std::size_t bytes, bool* zeroed) {
    *zeroed = false;
    return allocate(bytes);
  }
  virtual void free(void* p, std::size_t bytes) noexcept = 0;
};

// What a device whose work is queued (CUDA streams) does with the blocks the allocator hands
// out: memory that one queue's work freed may still be read by that queued work when the block is
// handed to another queue.
class BlockHandoff {
 public:
  virtual ~BlockHandoff() = default;
  // Called without the allocator's lock for each block allocate() returns; `reused` when the
  // block comes from the cache (freed earlier) rather than from the source. May throw Error: the
  // block goes back to the cache.
  virtual void handed_out(StorageBlock& block, bool reused) = 0;
};

class CachingAllocator {
 public:
  // `cache_limit`: the most bytes of freed blocks kept for reuse.
  CachingAllocator(MemorySource& source, std::size_t cache_limit);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of at least `bytes` (0 is allowed), reference count 1. Throws Error when the source
  // is out of memory even after the cache was emptied.
  StorageRef allocate(std::size_t bytes);
  // As allocate(), for a block about to be filled with zeros: sets *zeroed when it already reads
  // as zeros (a fresh block whose source says so; a reused one never does).
  StorageRef allocate_zeroed(std::size_t bytes, bool* zeroed);

  MemoryStats stats() const;
  void reset_peak();
  // Returns every cached block to the source.
  void empty_cache();
  void set_cache_limit(std::size_t bytes);
  // Who is told about each block handed out (not owned; outlives the allocator), or null. Set
  // before the first allocate().
  void set_handoff(BlockHandoff* handoff) { handoff_ = handoff; }

  // The size class `bytes` rounds up to: 64-byte steps up to 1 KiB, then 16 classes per power of
  // two (at most 6.25% over the request).
  static std::size_t size_class(std::size_t bytes);

  // The working set, for a later process to make ahead (backends/block_files.h): `listener` is
  // called, without the lock, each time the blocks of one size class in use at once reach a new
  // high (`capacity`, how many). Set before the first allocate().
  void set_peak_listener(std::function<void(std::size_t capacity, std::uint32_t blocks)> listener);
  // Makes blocks of size class `capacity` from the source until `blocks` of that class are held
  // (in use or cached), keeping them cached for allocate(): the pages a first iteration would
  // otherwise fault in and clear while it runs. Stops short at the cache limit, or where the
  // source has no memory (no error). Returns how many it made.
  std::uint32_t reserve(std::size_t capacity, std::uint32_t blocks);

 private:
  friend void release_block(StorageBlock* block) noexcept;
  StorageRef allocate_block(std::size_t bytes, bool* zeroed);  // zeroed: null for allocate()
  void release(StorageBlock* block) noexcept;
  static std::size_t class_index(std::size_t capacity);
  void evict_until(std::size_t cached_target);  // requires mutex_
  void cache_locked(StorageBlock* b);           // a free block into the cache; requires mutex_
  void return_to_source(StorageBlock* b);       // requires mutex_
  void unlink_lru(StorageBlock* b);             // requires mutex_
  void unlink_free(StorageBlock* b);            // requires mutex_
  StorageBlock* new_header();                   // requires mutex_

  MemorySource& source_;
  BlockHandoff* handoff_ = nullptr;
  mutable std::mutex mutex_;
  std::size_t cache_limit_;
  std::vector<StorageBlock*> free_lists_;  // head of each size class's free list
  StorageBlock* lru_oldest_ = nullptr;     // cached blocks, oldest freed first
  StorageBlock* lru_newest_ = nullptr;
  std::vector<StorageBlock*> spare_headers_;
  MemoryStats stats_;
  // Blocks of each size class in use, and their high (those held are these and the cached ones).
  std::vector<std::uint32_t> in_use_, peak_in_use_;
  std::function<void(std::size_t, std::uint32_t)> peak_listener_;
};

}  // namespace streamfuse::backends
