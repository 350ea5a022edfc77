#include "runtime/preparer.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "core/log.h"
#include "streamfuse/error.h"

namespace streamfuse::runtime {
namespace {

// Every preparer whose thread runs; their threads are stopped at exit (see submit_ops).
struct Live {
  std::mutex mutex;
  std::vector<Preparer*> preparers;
};
Live& live() {
  static Live* l = [] {
    std::atexit(&Preparer::stop_all);
    return new Live;
  }();
  return *l;
}

// Stops every preparer when the main thread's thread-locals are destroyed. exit() destroys the
// calling thread's thread-locals before it runs any exit handler or static destructor, so the
// preparing thread is joined before anything a library made while it prepared is destroyed:
// oneDNN makes statics the first time it builds a kind of primitive, and a preparation still
// in flight when the process exits would otherwise use them after their destructors ran (short
// processes crashed in oneDNN while the main thread ran the exit handlers). Only the main
// thread's: another thread's thread-locals go when that thread ends, not the process.
struct StopPreparersAtMainThreadExit {
  ~StopPreparersAtMainThreadExit() {
    if (gettid() == getpid()) Preparer::stop_all();
  }
};

void guard_this_threads_exit() {
  thread_local StopPreparersAtMainThreadExit guard;
  static_cast<void>(&guard);  // made on first use, so destroyed with this thread's others
}

// The main thread's guard, made while the library loads (on the main thread, for a program
// linked against it). Submitting work guards the submitting thread too, but a program whose main
// thread never submits (its streamfuse work all on other threads, or its plans read ahead by a
// job already running) exited with a preparation in flight: oneDNN crashed writing to what its
// exit had freed (MultiThreadTest, one run in two, once reading ahead no longer submitted from
// the thread that recorded).
const bool kMainThreadGuarded = (guard_this_threads_exit(), true);

}  // namespace

Preparer::Preparer(backends::Backend& backend) : backend_(backend) {}

Preparer::~Preparer() {
  {
    Live& l = live();
    std::lock_guard lock(l.mutex);
    l.preparers.erase(std::remove(l.preparers.begin(), l.preparers.end(), this), l.preparers.end());
  }
  stop();
}

void Preparer::stop_all() {
  Live& l = live();
  std::lock_guard lock(l.mutex);
  for (Preparer* p : l.preparers) p->stop();
}

void Preparer::stop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void Preparer::submit(Source source) {
  submit_job([this, source = std::move(source)] { prepare_all(source); });
}

void Preparer::submit_ops(std::vector<backends::PreparedOp> ops) {
  if (ops.empty()) return;
  // Exit runs exit handlers and static destructors in the reverse order of their registration,
  // and a library makes most of its statics the first time it prepares something (oneDNN: its
  // primitive cache, its implementation lists). Were that first time on the thread, those
  // statics would be destroyed before the handler that stops the thread runs, while the thread
  // may still use them (ASan saw exactly that in short test processes). So the first op of the
  // process is prepared here, and the handler registered again after it.
  static std::once_flag first;
  std::call_once(first, [&] {
    prepare_one(ops.front());
    ops.erase(ops.begin());
    std::atexit(&Preparer::stop_all);
  });
  if (!ops.empty()) submit([ops = std::move(ops)] { return ops; });
}

void Preparer::submit_job(std::function<void()> job) {
  guard_this_threads_exit();
  bool start = false;
  {
    std::lock_guard lock(mutex_);
    if (stop_) return;
    queue_.push_back(std::move(job));
    start = !thread_.joinable();
    if (start) thread_ = std::thread(&Preparer::run, this);
  }
  if (start) {
    Live& l = live();
    std::lock_guard lock(l.mutex);
    l.preparers.push_back(this);
  }
  work_cv_.notify_one();
}

void Preparer::wait_idle() {
  std::unique_lock lock(mutex_);
  idle_cv_.wait(lock, [&] { return (queue_.empty() && !busy_) || stop_; });
}

std::uint64_t Preparer::prepared() const { return prepared_.load(std::memory_order_relaxed); }

bool Preparer::stopping() {
  std::lock_guard lock(mutex_);
  return stop_;
}

void Preparer::run() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(mutex_);
      busy_ = false;
      if (queue_.empty()) idle_cv_.notify_all();
      work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) {
        idle_cv_.notify_all();
        return;
      }
      job = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
    }
    try {
      job();
    } catch (const std::exception& e) {
      core::warn_once("preparer-job", std::string("work ahead of need failed: ") + e.what());
    } catch (...) {
      core::warn_once("preparer-job", "work ahead of need failed with an unknown exception");
    }
  }
}

void Preparer::prepare_all(const Source& source) {
  std::vector<backends::PreparedOp> ops;
  try {
    ops = source();
  } catch (const std::exception& e) {
    core::warn_once("prepare-source", std::string("preparing ops ahead failed: ") + e.what());
  } catch (...) {
    core::warn_once("prepare-source", "preparing ops ahead failed with an unknown exception");
  }
  for (const backends::PreparedOp& op : ops) {
    if (stopping()) return;
    prepare_one(op);
  }
}

void Preparer::prepare_one(const backends::PreparedOp& op) {
  try {
    if (backend_.prepare(op)) prepared_.fetch_add(1, std::memory_order_relaxed);
    // The handler that stops this thread again, after whatever statics this preparation made:
    // exit runs it before their destructors (for an exit from a thread other than the main
    // one, which StopPreparersAtMainThreadExit does not see).
    std::atexit(&Preparer::stop_all);
  } catch (const std::exception& e) {  // a bad file's op, or the library refused it
    core::warn_once("prepare:" + to_string(op.op), "could not prepare " + to_string(op.op) +
                                                       " ahead: " + e.what() +
                                                       "; it is prepared when it first runs");
  } catch (...) {
    core::warn_once("prepare:" + to_string(op.op), "could not prepare " + to_string(op.op) +
                                                       " ahead; it is prepared when it first runs");
  }
}

}  // namespace streamfuse::runtime
