#include "cache/background_writer.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

namespace streamfuse::cache {
namespace {

// Every writer alive, flushed by one exit handler: what was learned just before exit still
// reaches the disk.
struct Live {
  std::mutex mutex;
  std::vector<BackgroundWriter*> writers;
};
Live& live() {
  static Live* l = [] {
    std::atexit([] {
      Live& l = live();
      std::lock_guard lock(l.mutex);
      for (BackgroundWriter* w : l.writers) w->flush();
    });
    return new Live;
  }();
  return *l;
}

}  // namespace

BackgroundWriter::BackgroundWriter(std::chrono::milliseconds delay) : delay_(delay) {
  Live& l = live();
  std::lock_guard lock(l.mutex);
  l.writers.push_back(this);
}

BackgroundWriter::~BackgroundWriter() {
  {
    Live& l = live();
    std::lock_guard lock(l.mutex);
    l.writers.erase(std::find(l.writers.begin(), l.writers.end(), this));
  }
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void BackgroundWriter::submit(std::uint64_t key, std::function<void()> job) {
  {
    std::lock_guard lock(mutex_);
    auto [it, added] = pending_.try_emplace(key, std::move(job));
    if (!added) {
      it->second = std::move(job);  // queued already: the latest form replaces it
      return;
    }
    queue_.push_back({key, Clock::now() + delay_});
    if (!thread_.joinable()) thread_ = std::thread(&BackgroundWriter::run, this);
  }
  work_cv_.notify_one();
}

void BackgroundWriter::flush() {
  std::unique_lock lock(mutex_);
  ++flushing_;
  work_cv_.notify_all();
  idle_cv_.wait(lock, [&] { return (queue_.empty() && !running_) || !thread_.joinable(); });
  --flushing_;
}

void BackgroundWriter::run() {
#ifdef __linux__
  // The lowest priority: a write is never urgent, and on a machine whose cores all run the
  // program it would otherwise take one from it. (Linux: a thread's nice value is its own.)
  setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 19);
#endif
  std::unique_lock lock(mutex_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) break;  // stopping, everything written
    if (!stop_ && flushing_ == 0 && Clock::now() < queue_.front().due) {
      work_cv_.wait_until(lock, queue_.front().due, [&] { return stop_ || flushing_ > 0; });
      continue;
    }
    const auto it = pending_.find(queue_.front().key);
    std::function<void()> job = std::move(it->second);
    pending_.erase(it);
    queue_.pop_front();
    running_ = true;
    lock.unlock();
    job();
    lock.lock();
    running_ = false;
    if (queue_.empty()) idle_cv_.notify_all();
  }
  idle_cv_.notify_all();
}

}  // namespace streamfuse::cache
