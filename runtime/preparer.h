// Preparer: a device's thread for work ahead of need, so that a process that starts with a warm
// cache directory or a bundle does neither in its first iteration: preparing ops before their
// first run (Backend::prepare: oneDNN primitives), and reading plans ahead for the plan store. It
// works while the process starts (loads weights, makes inputs); a run that needs what is being
// prepared waits for it, one that needs something else goes on beside it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "backends/backend.h"

namespace streamfuse::runtime {

class Preparer {
 public:
  using Source = std::function<std::vector<backends::PreparedOp>()>;

  explicit Preparer(backends::Backend& backend);
  // Stops after the op being prepared.
  ~Preparer();
  Preparer(const Preparer&) = delete;
  Preparer& operator=(const Preparer&) = delete;

  // Prepares the ops `source` returns, on the preparer's thread, after the work submitted
  // before. The thread starts with the first work. Only for ops whose library statics the
  // process has made already (tests); the runtime uses submit_ops.
  void submit(Source source);
  // Prepares `ops` on the preparer's thread, except the first op of the process, which is
  // prepared on the calling thread: what a backend's library makes when it first prepares must
  // outlive the exit handler that stops the thread (see preparer.cpp).
  void submit_ops(std::vector<backends::PreparedOp> ops);
  // Runs `job` on the preparer's thread after the work submitted before; its exceptions are
  // warned about once.
  void submit_job(std::function<void()> job);
  // Returns when everything submitted so far is prepared (for tests and benchmarks).
  void wait_idle();
  // Ops prepared so far (not counting those the backend had, or prepares nothing for).
  std::uint64_t prepared() const;

  // Stops every preparer (after the op each is preparing): run at exit, before static
  // destructors that were registered earlier.
  static void stop_all();

 private:
  void run();
  void prepare_all(const Source& source);
  void prepare_one(const backends::PreparedOp& op);
  bool stopping();
  void stop();

  backends::Backend& backend_;
  mutable std::mutex mutex_;
  std::condition_variable work_cv_, idle_cv_;
  std::deque<std::function<void()>> queue_;
  bool busy_ = false;
  bool stop_ = false;
  std::atomic<std::uint64_t> prepared_{0};
  std::thread thread_;
};

}  // namespace streamfuse::runtime
