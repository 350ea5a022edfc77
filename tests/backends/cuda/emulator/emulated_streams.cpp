#include "tests/backends/cuda/emulator/emulated_streams.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "tests/backends/cuda/emulator/emulated_context.h"

namespace streamfuse::backends::cuda::emulator {
namespace {

using Clock = std::chrono::steady_clock;

class Stream {
 public:
  explicit Stream(bool blocking) : blocking_(blocking), worker_([this] { run(); }) {}
  // Runs what is queued, then ends the worker.
  ~Stream() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    work_ready_.notify_one();
    worker_.join();
  }

  bool blocking() const { return blocking_; }

  void enqueue(Work work) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(work));
    }
    work_ready_.notify_one();
  }

  void synchronize() {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [&] { return queue_.empty() && !running_; });
  }

  bool idle() {
    std::lock_guard lock(mutex_);
    return queue_.empty() && !running_;
  }

 private:
  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      work_ready_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      Work work = std::move(queue_.front());
      queue_.pop_front();
      running_ = true;
      lock.unlock();
      work();
      work = nullptr;  // what it holds (a launch's module) is released outside the lock
      lock.lock();
      running_ = false;
      if (queue_.empty()) idle_.notify_all();
    }
  }

  const bool blocking_;
  std::mutex mutex_;
  std::condition_variable work_ready_, idle_;
  std::deque<Work> queue_;
  bool running_ = false, stop_ = false;
  std::thread worker_;  // last: starts once the rest is constructed
};

// The point an event record stands for: done once the stream reached it.
struct Point {
  bool done = false;
  Clock::time_point when;
};

struct Event {
  bool timing = true;
  std::shared_ptr<Point> last;  // of the latest record; null before the first
};

// Every stream and event, so that a destroyed or made-up handle is refused; one lock and one
// condition for all points (completions are rare next to the work between them).
struct Registry {
  std::mutex mutex;
  // Shared: a synchronization of every stream may still wait on one being destroyed.
  std::unordered_map<CUstream, std::shared_ptr<Stream>> streams;
  std::unordered_map<CUevent, std::unique_ptr<Event>> events;
  std::condition_variable point_done;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: see emulated_context.cpp
  return *r;
}

bool is_legacy(CUstream s) { return !s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD; }

std::shared_ptr<Stream> find_stream(CUstream s) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  const auto it = r.streams.find(s);
  return it == r.streams.end() ? nullptr : it->second;
}

void complete(Point& p) {
  Registry& r = registry();
  {
    std::lock_guard lock(r.mutex);
    p.done = true;
    p.when = Clock::now();
  }
  r.point_done.notify_all();
}

void wait_for(Point& p) {
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  r.point_done.wait(lock, [&] { return p.done; });
}

// The event's last point (null when never recorded), or CUDA_ERROR_INVALID_HANDLE.
CUresult last_point(CUevent e, std::shared_ptr<Point>& out, bool* timing = nullptr) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  const auto it = r.events.find(e);
  if (it == r.events.end()) return CUDA_ERROR_INVALID_HANDLE;
  out = it->second->last;
  if (timing) *timing = it->second->timing;
  return CUDA_SUCCESS;
}

}  // namespace

CUresult create_stream(CUstream* stream, unsigned flags) {
  if (const CUresult r = check_current(); r != CUDA_SUCCESS) return r;
  if (!stream || (flags & ~unsigned{CU_STREAM_NON_BLOCKING}) != 0) return CUDA_ERROR_INVALID_VALUE;
  auto s = std::make_shared<Stream>((flags & CU_STREAM_NON_BLOCKING) == 0);
  *stream = reinterpret_cast<CUstream>(s.get());
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.streams.emplace(*stream, std::move(s));
  return CUDA_SUCCESS;
}

CUresult destroy_stream(CUstream stream) {
  if (const CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  std::shared_ptr<Stream> s;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    const auto it = r.streams.find(stream);
    if (it == r.streams.end()) return CUDA_ERROR_INVALID_HANDLE;
    s = std::move(it->second);
    r.streams.erase(it);
  }
  s.reset();  // drains and joins (unless a synchronization holds it), outside the lock
  return CUDA_SUCCESS;
}

CUresult submit(CUstream stream, Work work) {
  if (is_legacy(stream)) {
    synchronize_streams(true);
    work();
    return CUDA_SUCCESS;
  }
  const std::shared_ptr<Stream> s = find_stream(stream);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  s->enqueue(std::move(work));
  return CUDA_SUCCESS;
}

CUresult synchronize_stream(CUstream stream) {
  if (const CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  if (is_legacy(stream)) {
    synchronize_streams(true);
    return CUDA_SUCCESS;
  }
  const std::shared_ptr<Stream> s = find_stream(stream);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  s->synchronize();
  return CUDA_SUCCESS;
}

CUresult query_stream(CUstream stream) {
  if (const CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  if (is_legacy(stream)) {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    for (const auto& [handle, s] : r.streams)
      if (s->blocking() && !s->idle()) return CUDA_ERROR_NOT_READY;
    return CUDA_SUCCESS;
  }
  const std::shared_ptr<Stream> s = find_stream(stream);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  return s->idle() ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

void synchronize_streams(bool blocking_only) {
  // Snapshot under the lock, wait outside it: a stream's work may need the registry (events).
  std::vector<std::shared_ptr<Stream>> streams;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    for (const auto& [handle, s] : r.streams)
      if (!blocking_only || s->blocking()) streams.push_back(s);
  }
  for (const std::shared_ptr<Stream>& s : streams) s->synchronize();
}

CUresult create_event(CUevent* event, unsigned flags) {
  if (const CUresult r = check_current(); r != CUDA_SUCCESS) return r;
  constexpr unsigned kKnown =
      CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  if (!event || (flags & ~kKnown) != 0 ||
      ((flags & CU_EVENT_INTERPROCESS) && !(flags & CU_EVENT_DISABLE_TIMING)))
    return CUDA_ERROR_INVALID_VALUE;
  auto e = std::make_unique<Event>();
  e->timing = (flags & CU_EVENT_DISABLE_TIMING) == 0;
  *event = reinterpret_cast<CUevent>(e.get());
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.events.emplace(*event, std::move(e));
  return CUDA_SUCCESS;
}

CUresult destroy_event(CUevent event) {
  if (const CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  // A record still queued holds its point, not the event: it completes unobserved.
  return r.events.erase(event) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult record_event(CUevent event, CUstream stream) {
  if (const CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  if (!is_legacy(stream) && !find_stream(stream)) return CUDA_ERROR_INVALID_HANDLE;
  auto point = std::make_shared<Point>();
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    const auto it = r.events.find(event);
    if (it == r.events.end()) return CUDA_ERROR_INVALID_HANDLE;
    it->second->last = point;
  }
  return submit(stream, [point] { complete(*point); });
}

CUresult synchronize_event(CUevent event) {
  if (const CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  std::shared_ptr<Point> p;
  if (const CUresult r = last_point(event, p); r != CUDA_SUCCESS) return r;
  if (p) wait_for(*p);
  return CUDA_SUCCESS;
}

CUresult query_event(CUevent event) {
  if (const CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  std::shared_ptr<Point> p;
  if (const CUresult r = last_point(event, p); r != CUDA_SUCCESS) return r;
  if (!p) return CUDA_SUCCESS;
  std::lock_guard lock(registry().mutex);
  return p->done ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult elapsed_time(float* ms, CUevent start, CUevent end) {
  if (const CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  if (!ms) return CUDA_ERROR_INVALID_VALUE;
  std::shared_ptr<Point> a, b;
  bool timing_a = false, timing_b = false;
  if (const CUresult r = last_point(start, a, &timing_a); r != CUDA_SUCCESS) return r;
  if (const CUresult r = last_point(end, b, &timing_b); r != CUDA_SUCCESS) return r;
  // As the driver: events without timing, or never recorded, are invalid handles here.
  if (!timing_a || !timing_b || !a || !b) return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard lock(registry().mutex);
  if (!a->done || !b->done) return CUDA_ERROR_NOT_READY;
  *ms = std::chrono::duration<float, std::milli>(b->when - a->when).count();
  return CUDA_SUCCESS;
}

CUresult wait_event(CUstream stream, CUevent event) {
  if (const CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  if (!is_legacy(stream) && !find_stream(stream)) return CUDA_ERROR_INVALID_HANDLE;
  std::shared_ptr<Point> p;
  if (const CUresult r = last_point(event, p); r != CUDA_SUCCESS) return r;
  if (!p) return CUDA_SUCCESS;  // never recorded: nothing to wait for
  return submit(stream, [p] { wait_for(*p); });
}

}  // namespace streamfuse::backends::cuda::emulator
