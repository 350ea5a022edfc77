// BackgroundWriter: runs a cache's file writes on a thread of its own, in the order they were
// submitted, at the lowest CPU priority, so that the threads running ops never wait for the disk.
// A job runs `delay` after it was first submitted: what a program learns in a burst (a first
// iteration exploring, a bundle loaded at start-up) is written once, after the burst, instead of
// competing with it for the cores (measured: with no delay the cold-start benchmark's empty-cache
// first iteration took twice as long on 2 cores; 50 ms put a loaded bundle's writes into the
// first iteration). Every writer alive runs what is queued before the process exits (the device
// runtimes that own them never die).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include <boost/unordered/unordered_flat_map.hpp>

namespace streamfuse::cache {

class BackgroundWriter {
 public:
  explicit BackgroundWriter(std::chrono::milliseconds delay = std::chrono::seconds(1));
  // Runs what is queued, then stops the thread.
  ~BackgroundWriter();
  BackgroundWriter(const BackgroundWriter&) = delete;
  BackgroundWriter& operator=(const BackgroundWriter&) = delete;

  // Queues `job` (which must not throw). A job still queued under the same `key` is replaced in
  // place: a file saved again before it was written is written once, in its latest form. The
  // thread starts with the first job.
  void submit(std::uint64_t key, std::function<void()> job);
  // Runs every job submitted so far (without waiting for its delay) and returns when they ran.
  void flush();

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable work_cv_, idle_cv_;
  using Clock = std::chrono::steady_clock;
  struct Queued {
    std::uint64_t key;
    Clock::time_point due;
  };
  std::chrono::milliseconds delay_;
  std::deque<Queued> queue_;
  boost::unordered_flat_map<std::uint64_t, std::function<void()>> pending_;
  bool running_ = false;  // a job is running
  int flushing_ = 0;      // threads in flush(): run jobs now
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace streamfuse::cache
