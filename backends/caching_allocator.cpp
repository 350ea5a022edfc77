#include "backends/caching_allocator.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <string>

#include "streamfuse/error.h"

namespace streamfuse::backends {
namespace {
constexpr std::size_t kSmallLimit = 1024;  // 64-byte classes up to here
constexpr std::size_t kClassesPerOctave = 16;
constexpr std::size_t kNumClasses = kSmallLimit / 64 + 64 * kClassesPerOctave;

std::string human_bytes(std::size_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 5) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}
}  // namespace

std::size_t CachingAllocator::size_class(std::size_t bytes) {
  if (bytes <= kSmallLimit) return bytes <= 64 ? 64 : (bytes + 63) & ~std::size_t{63};
  const int p = std::bit_width(bytes - 1) - 1;  // 2^p < bytes <= 2^(p+1)
  const std::size_t step = std::size_t{1} << (p - 4);
  return (bytes + step - 1) & ~(step - 1);
}

std::size_t CachingAllocator::class_index(std::size_t capacity) {
  if (capacity <= kSmallLimit) return capacity / 64 - 1;
  const int p = std::bit_width(capacity - 1) - 1;
  const std::size_t k = capacity >> (p - 4);  // in [17, 32]
  return kSmallLimit / 64 + static_cast<std::size_t>(p - 10) * kClassesPerOctave + (k - 17);
}

CachingAllocator::CachingAllocator(MemorySource& source, std::size_t cache_limit)
    : source_(source),
      cache_limit_(cache_limit),
      free_lists_(kNumClasses, nullptr),
      in_use_(kNumClasses, 0),
      peak_in_use_(kNumClasses, 0) {}

CachingAllocator::~CachingAllocator() {
  empty_cache();
  for (StorageBlock* h : spare_headers_) delete h;
}

StorageBlock* CachingAllocator::new_header() {
  if (spare_headers_.empty()) return new StorageBlock;
  StorageBlock* h = spare_headers_.back();
  spare_headers_.pop_back();
  return h;
}

StorageRef CachingAllocator::allocate(std::size_t bytes) { return allocate_block(bytes, nullptr); }

StorageRef CachingAllocator::allocate_zeroed(std::size_t bytes, bool* zeroed) {
  *zeroed = false;
  return allocate_block(bytes, zeroed);
}

StorageRef CachingAllocator::allocate_block(std::size_t bytes, bool* zeroed) {
  const std::size_t capacity = size_class(bytes);
  const std::size_t index = class_index(capacity);
  std::unique_lock lock(mutex_);
  StorageBlock* b = free_lists_[index];
  const bool reused = b != nullptr;
  std::uint32_t peak = 0;  // a new high of this class's blocks in use, for the listener
  if (b) {
    unlink_free(b);
    unlink_lru(b);
    stats_.bytes_cached -= static_cast<std::int64_t>(capacity);
    ++stats_.cache_hits;
    // A block made ahead and never used is as good as fresh pages for zeros (a KV cache written
    // a position at a time would otherwise be cleared whole first).
    if (zeroed) *zeroed = b->zero;
    b->zero = false;
  } else {
    const auto take = [&] {
      return zeroed ? source_.allocate_zeroed(capacity, zeroed) : source_.allocate(capacity);
    };
    void* p = take();
    if (!p && stats_.bytes_cached > 0) {  // give the cache back and try once more
      evict_until(0);
      p = take();
    }
    if (!p)
      throw Error("out of memory: could not allocate " + human_bytes(bytes) + " (" +
                  human_bytes(static_cast<std::size_t>(stats_.bytes_in_use)) +
                  " already held by live tensors); free tensors or use smaller shapes");
    b = new_header();
    b->data = p;
    b->capacity = capacity;
    b->owner = this;
    b->zero = false;
    stats_.bytes_reserved += static_cast<std::int64_t>(capacity);
  }
  if (++in_use_[index] > peak_in_use_[index]) peak = peak_in_use_[index] = in_use_[index];
  b->bytes = bytes;
  b->refs.store(1, std::memory_order_relaxed);
  ++stats_.allocations;
  ++stats_.live_buffers;
  stats_.bytes_in_use += static_cast<std::int64_t>(bytes);
  if (stats_.bytes_in_use > stats_.peak_bytes_in_use)
    stats_.peak_bytes_in_use = stats_.bytes_in_use;
  lock.unlock();
  if (peak && peak_listener_) peak_listener_(capacity, peak);
  StorageRef ref(b);
  if (handoff_) handoff_->handed_out(*b, reused);  // throws: `ref` gives the block back
  return ref;
}

void release_block(StorageBlock* block) noexcept {
  if (block->borrowed()) {
    delete block;  // and with it the lender's reference
    return;
  }
  block->owner->release(block);
}

void CachingAllocator::release(StorageBlock* b) noexcept {
  std::lock_guard lock(mutex_);
  --in_use_[class_index(b->capacity)];
  --stats_.live_buffers;
  stats_.bytes_in_use -= static_cast<std::int64_t>(b->bytes);
  if (b->capacity > cache_limit_) {  // too big to keep at all
    return_to_source(b);
    return;
  }
  evict_until(cache_limit_ - b->capacity);
  cache_locked(b);
}

void CachingAllocator::cache_locked(StorageBlock* b) {
  const std::size_t index = class_index(b->capacity);
  b->prev_free = nullptr;
  b->next_free = free_lists_[index];
  if (b->next_free) b->next_free->prev_free = b;
  free_lists_[index] = b;
  b->lru_prev = lru_newest_;
  b->lru_next = nullptr;
  (lru_newest_ ? lru_newest_->lru_next : lru_oldest_) = b;
  lru_newest_ = b;
  stats_.bytes_cached += static_cast<std::int64_t>(b->capacity);
}

void CachingAllocator::unlink_lru(StorageBlock* b) {
  (b->lru_prev ? b->lru_prev->lru_next : lru_oldest_) = b->lru_next;
  (b->lru_next ? b->lru_next->lru_prev : lru_newest_) = b->lru_prev;
  b->lru_prev = b->lru_next = nullptr;
}

void CachingAllocator::unlink_free(StorageBlock* b) {
  (b->prev_free ? b->prev_free->next_free : free_lists_[class_index(b->capacity)]) = b->next_free;
  if (b->next_free) b->next_free->prev_free = b->prev_free;
  b->prev_free = b->next_free = nullptr;
}

void CachingAllocator::evict_until(std::size_t cached_target) {
  while (lru_oldest_ && static_cast<std::size_t>(stats_.bytes_cached) > cached_target) {
    StorageBlock* b = lru_oldest_;
    unlink_lru(b);
    unlink_free(b);
    stats_.bytes_cached -= static_cast<std::int64_t>(b->capacity);
    return_to_source(b);
  }
}

void CachingAllocator::return_to_source(StorageBlock* b) {
  source_.free(b->data, b->capacity);
  stats_.bytes_reserved -= static_cast<std::int64_t>(b->capacity);
  spare_headers_.push_back(b);
}

void CachingAllocator::set_peak_listener(
    std::function<void(std::size_t capacity, std::uint32_t blocks)> listener) {
  std::lock_guard lock(mutex_);
  peak_listener_ = std::move(listener);
}

std::uint32_t CachingAllocator::reserve(std::size_t capacity, std::uint32_t blocks) {
  if (capacity == 0 || size_class(capacity) != capacity) return 0;
  const std::size_t index = class_index(capacity);
  std::uint32_t made = 0;
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      std::uint32_t held = in_use_[index];  // and those cached
      for (const StorageBlock* c = free_lists_[index]; c && held < blocks; c = c->next_free) ++held;
      if (held >= blocks || static_cast<std::size_t>(stats_.bytes_cached) + capacity > cache_limit_)
        return made;
    }
    // The pages are made (and cleared, by the kernel) without the lock: allocations of other
    // classes go on meanwhile. One of this class may come from the source beside it, and then
    // this one is cached all the same (one over: the next allocation of the class takes it).
    bool zero = false;
    void* p = source_.allocate_ahead(capacity, &zero);
    if (!p) return made;
    std::lock_guard lock(mutex_);
    StorageBlock* b = new_header();
    b->data = p;
    b->capacity = capacity;
    b->owner = this;
    b->bytes = 0;
    b->zero = zero;
    stats_.bytes_reserved += static_cast<std::int64_t>(capacity);
    evict_until(cache_limit_ - capacity);
    cache_locked(b);
    ++made;
  }
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void CachingAllocator::reset_peak() {
  std::lock_guard lock(mutex_);
  stats_.peak_bytes_in_use = stats_.bytes_in_use;
}

void CachingAllocator::empty_cache() {
  std::lock_guard lock(mutex_);
  evict_until(0);
}

void CachingAllocator::set_cache_limit(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  cache_limit_ = bytes;
  evict_until(bytes);
}

}  // namespace streamfuse::backends
