// What the CPU's oneDNN engines (matmul_onednn.cpp, conv_onednn.cpp) share: the calling thread's
// OpenMP thread count for a scope, a per-thread scratchpad, VTune registration off, and a bounded
// cache of plans (a primitive and how to call it) built once per key, by one thread at a time.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include <boost/unordered/unordered_flat_map.hpp>
#include <boost/unordered/unordered_flat_set.hpp>
#include <oneapi/dnnl/dnnl.hpp>
#ifdef STREAMFUSE_OPENMP
#include <omp.h>
#endif

#include "streamfuse/dtype.h"

namespace streamfuse::backends::cpu {

// oneDNN's data type of a float dtype the engines compute in (f32, f16, bf16).
inline dnnl::memory::data_type dnnl_type(DType d) {
  return d == kF16    ? dnnl::memory::data_type::f16
         : d == kBF16 ? dnnl::memory::data_type::bf16
                      : dnnl::memory::data_type::f32;
}

// Sets the calling thread's OpenMP thread count for its scope: oneDNN (OpenMP runtime) sizes
// its parallel regions by omp_get_max_threads(), both when a primitive is created (which fixes
// its work split) and when it runs.
class ScopedThreads {
 public:
  explicit ScopedThreads(int num_threads) {
#ifdef STREAMFUSE_OPENMP
    previous_ = omp_get_max_threads();
    if (num_threads > 0) omp_set_num_threads(num_threads);
#else
    (void)num_threads;
#endif
  }
  ~ScopedThreads() {
#ifdef STREAMFUSE_OPENMP
    omp_set_num_threads(previous_);
#endif
  }
  ScopedThreads(const ScopedThreads&) = delete;
  ScopedThreads& operator=(const ScopedThreads&) = delete;

 private:
  int previous_ = 1;
};

// The scratchpad a primitive call brings (oneDNN's own is per creating thread, and cached
// primitives run on other threads): at least `bytes`, 64-byte aligned, valid while this object
// lives. A grow-only buffer of the calling thread, so that steady-state calls allocate nothing;
// once the thread's buffer is destroyed (ops run by the thread-exit handlers that drain its
// streams come after it), a buffer of its own. A thread whose buffer must grow first takes the
// buffer made ahead (make_scratchpad_ahead) if that is large enough.
class Scratchpad {
 public:
  explicit Scratchpad(std::size_t bytes);
  ~Scratchpad();
  Scratchpad(const Scratchpad&) = delete;
  Scratchpad& operator=(const Scratchpad&) = delete;
  void* data() const { return data_; }

 private:
  void* data_ = nullptr;
  bool owned_ = false;
};

// Makes a scratchpad buffer of at least `bytes` with its pages touched, for the first thread
// whose own buffer is smaller (one buffer, grown to the largest size asked for). Preparing a
// primitive calls it with the primitive's scratchpad size: the first run of a prepared product
// found a fresh buffer (0.25-0.5 MB for a 64 x 512 x 2048 product) and faulted its pages in, in
// the first iteration.
void make_scratchpad_ahead(std::size_t bytes);
// The size of the buffer made ahead that no thread has taken yet (0: none), for tests.
std::size_t scratchpad_ahead_bytes();

// A 64-byte-aligned buffer of at least `bytes` (never empty), for operand copies and layouts.
struct AlignedDelete {
  void operator()(void* p) const;
};
using AlignedBuffer = std::unique_ptr<void, AlignedDelete>;
AlignedBuffer allocate_aligned(std::size_t bytes);

// `n` f32 results of a computation run via f32, rounded to f16 or bf16 (nearest even) at `dst`.
void round_f32_results(DType dtype, const float* src, void* dst, std::int64_t n, int num_threads);

// Turns off oneDNN's registration of each JIT kernel with VTune unless the user asked for
// profiling through the environment: on the first kernel it searches the library path for
// libJitPI.so (~140 failed opens, 0.2-0.3 ms of the first primitive's latency without VTune).
void configure_onednn_jit_profiling();

// Plans by key, at most `max_plans`, the least recently used evicted first. A plan is built by
// one thread while others that need the same key wait for it, and plans for other keys are built
// at the same time (a preparing thread beside a running one).
template <class Key, class Hash, class Plan>
class PlanCache {
 public:
  struct Found {
    std::shared_ptr<const Plan> plan;
    bool first_use = false;  // the first run (for_run) that uses this plan in the process
  };

  explicit PlanCache(std::size_t max_plans) : max_plans_(max_plans) {}

  // The plan for `key`, built by `make()` unless it exists or another thread is building it
  // (then this one waits for it). `for_run`: the caller runs it (counts as a use). An exception
  // from make() propagates, and a waiter then builds the plan (meeting the error) itself.
  template <class Make>
  Found find_or_build(const Key& key, bool for_run, Make&& make) {
    std::unique_lock lock(mutex_);
    for (;;) {
      if (auto it = plans_.find(key); it != plans_.end()) {
        it->second.last_use = ++clock_;
        const bool first_use = for_run && !it->second.used;
        if (for_run) it->second.used = true;
        return {it->second.plan, first_use};
      }
      if (!building_.contains(key)) break;
      built_.wait(lock);
    }
    building_.insert(key);
    lock.unlock();
    std::shared_ptr<const Plan> plan;
    try {
      plan = make();
    } catch (...) {
      lock.lock();
      building_.erase(key);
      built_.notify_all();
      throw;
    }
    lock.lock();
    building_.erase(key);
    insert(key, plan, for_run);
    built_.notify_all();
    return {std::move(plan), for_run};
  }

  std::size_t size() const {
    std::lock_guard lock(mutex_);
    return plans_.size();
  }

 private:
  struct Entry {
    std::shared_ptr<const Plan> plan;
    std::uint64_t last_use = 0;
    bool used = false;  // by a run, in this process
  };

  // Requires mutex_. Evicting scans every entry for the least recently used; at a few hundred
  // entries that costs far less than the primitive creation that precedes it, and keeps lookups
  // to one hash probe.
  void insert(const Key& key, std::shared_ptr<const Plan> plan, bool used) {
    if (plans_.size() >= max_plans_) {
      auto oldest = plans_.begin();
      for (auto it = plans_.begin(); it != plans_.end(); ++it)
        if (it->second.last_use < oldest->second.last_use) oldest = it;
      plans_.erase(oldest);
    }
    plans_.insert_or_assign(key, Entry{std::move(plan), ++clock_, used});
  }

  const std::size_t max_plans_;
  mutable std::mutex mutex_;  // guards plans_, building_ and clock_
  std::condition_variable built_;
  boost::unordered_flat_map<Key, Entry, Hash> plans_;
  // Keys whose plan a thread is building.
  boost::unordered_flat_set<Key, Hash> building_;
  std::uint64_t clock_ = 0;
};

}  // namespace streamfuse::backends::cpu
