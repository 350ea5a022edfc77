// Preparer: sources and jobs run on its thread in submission order, each op a source returns is
// handed to Backend::prepare (counted when it prepared something), failures are warned about and
// survived, and the destructor stops after the op being prepared.
#include "runtime/preparer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "backends/backend.h"
#include "core/ir.h"
#include "streamfuse/error.h"

namespace core = streamfuse::core;
namespace runtime = streamfuse::runtime;
namespace sb = streamfuse::backends;
using namespace std::chrono_literals;

namespace {

// A prepared op told apart by `tag`: a full of a [2, 3] f32 tensor, with `tag` as its value, so
// that ops (and their warn_once keys) differ.
sb::PreparedOp make_op(double tag) {
  sb::PreparedOp p;
  p.op.kind = core::OpKind::kFull;
  p.op.scalars.push_back(tag);
  p.op.outputs.push_back(
      {1, streamfuse::Shape{2, 3}, streamfuse::kF32, core::TensorStatus::kNotInit});
  return p;
}
double tag_of(const sb::PreparedOp& p) { return p.op.scalars.at(0).to_double(); }

// Tags never used before in this process: warn_once keys stay new when tests repeat.
double fresh_tag() {
  static std::atomic<int> next{1000};
  return next.fetch_add(1);
}

// A backend that only prepares: records every op it is given (and the test's markers, in one
// log), throws streamfuse::Error for chosen tags, prepares nothing for others, and can block on
// one tag until the test releases it.
class FakeBackend final : public sb::Backend {
 public:
  streamfuse::Device device() const override { return streamfuse::Device::cpu(); }
  void configure(const sb::BackendSettings&) override {}
  void execute(const core::OpDesc&, std::span<sb::TensorHandle>,
               std::span<sb::TensorHandle>) override {
    ADD_FAILURE() << "execute() called";
  }
  sb::TensorHandle allocate(const streamfuse::Shape&, streamfuse::DType) override { return {}; }
  sb::TensorHandle from_host(const void*, streamfuse::DType, const streamfuse::Shape&) override {
    return {};
  }
  void copy(const streamfuse::Shape&, const sb::TensorHandle&, streamfuse::DType,
            const sb::TensorHandle&, streamfuse::DType) override {}
  void to_host(const sb::TensorHandle&, streamfuse::DType, const streamfuse::Shape&,
               void*) override {}
  streamfuse::MemoryStats memory_stats() const override { return {}; }
  void reset_peak_memory_stats() override {}
  void empty_cache() override {}

  bool prepare(const sb::PreparedOp& p) override {
    const double tag = tag_of(p);
    {
      std::unique_lock lock(mutex_);
      log_.push_back("op " + std::to_string(static_cast<int>(tag)));
      if (tag == block_tag_) {
        blocked_ = true;
        cv_.notify_all();
        cv_.wait(lock, [&] { return released_; });
        block_done_ = true;
      }
    }
    if (slow_) std::this_thread::sleep_for(2ms);
    if (throw_tags_.contains(tag)) throw streamfuse::Error("bad op " + core::to_string(p.op));
    return !nothing_tags_.contains(tag);
  }

  // Set before the preparer gets work.
  std::set<double> throw_tags_, nothing_tags_;
  double block_tag_ = -1;
  bool slow_ = false;

  void mark(const std::string& what) {
    std::lock_guard lock(mutex_);
    log_.push_back(what);
  }
  std::vector<std::string> log() const {
    std::lock_guard lock(mutex_);
    return log_;
  }
  void wait_until_blocked() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return blocked_; });
  }
  void release() {
    std::lock_guard lock(mutex_);
    released_ = true;
    cv_.notify_all();
  }
  bool block_done() const {
    std::lock_guard lock(mutex_);
    return block_done_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::string> log_;
  bool blocked_ = false, released_ = false, block_done_ = false;
};

std::vector<sb::PreparedOp> ops(std::initializer_list<double> tags) {
  std::vector<sb::PreparedOp> out;
  for (double t : tags) out.push_back(make_op(t));
  return out;
}

TEST(PreparerTest, WaitIdleWithNothingSubmittedReturns) {
  FakeBackend backend;
  runtime::Preparer preparer(backend);
  preparer.wait_idle();
  EXPECT_EQ(preparer.prepared(), 0u);
  EXPECT_TRUE(backend.log().empty());
}

TEST(PreparerTest, OpsArePreparedInOrderAndCountedWhenTheBackendPreparedThem) {
  FakeBackend backend;
  backend.nothing_tags_ = {2, 4};
  runtime::Preparer preparer(backend);
  preparer.submit([] { return ops({1, 2, 3, 4, 5}); });
  preparer.wait_idle();
  EXPECT_EQ(backend.log(), (std::vector<std::string>{"op 1", "op 2", "op 3", "op 4", "op 5"}));
  EXPECT_EQ(preparer.prepared(), 3u);  // 1, 3 and 5; 2 and 4 prepared nothing
}

TEST(PreparerTest, AThrowingOpIsWarnedOnceAndTheRestStillRun) {
  FakeBackend backend;
  const double bad = fresh_tag();
  backend.throw_tags_ = {bad};
  runtime::Preparer preparer(backend);
  ::testing::internal::CaptureStderr();
  preparer.submit([bad] { return ops({1, bad, 2, bad, 3}); });
  preparer.wait_idle();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(backend.log(),
            (std::vector<std::string>{"op 1", "op " + std::to_string(static_cast<int>(bad)), "op 2",
                                      "op " + std::to_string(static_cast<int>(bad)), "op 3"}));
  EXPECT_EQ(preparer.prepared(), 3u);
  // One warning for the op that threw twice, naming it and what the backend said.
  const std::string needle = "could not prepare";
  const std::size_t first = err.find(needle);
  ASSERT_NE(first, std::string::npos) << err;
  EXPECT_EQ(err.find(needle, first + 1), std::string::npos) << "warned twice:\n" << err;
  EXPECT_NE(err.find("bad op"), std::string::npos) << err;
}

TEST(PreparerTest, JobsAndSourcesRunInSubmissionOrder) {
  FakeBackend backend;
  runtime::Preparer preparer(backend);
  preparer.submit_job([&] { backend.mark("job 1"); });
  preparer.submit([&] {
    backend.mark("source a");
    return ops({1, 2});
  });
  preparer.submit_job([&] { backend.mark("job 2"); });
  preparer.submit([&] {
    backend.mark("source b");
    return ops({3});
  });
  preparer.submit_job([&] { backend.mark("job 3"); });
  preparer.wait_idle();
  EXPECT_EQ(backend.log(), (std::vector<std::string>{"job 1", "source a", "op 1", "op 2", "job 2",
                                                     "source b", "op 3", "job 3"}));
  EXPECT_EQ(preparer.prepared(), 3u);
}

TEST(PreparerTest, ASourceThatThrowsIsSurvived) {
  FakeBackend backend;
  runtime::Preparer preparer(backend);
  preparer.submit([]() -> std::vector<sb::PreparedOp> { throw streamfuse::Error("unreadable"); });
  preparer.submit([] { return ops({7}); });
  preparer.wait_idle();
  EXPECT_EQ(backend.log(), std::vector<std::string>{"op 7"});
  EXPECT_EQ(preparer.prepared(), 1u);
}

TEST(PreparerTest, AJobThatThrowsIsSurvived) {
  FakeBackend backend;
  runtime::Preparer preparer(backend);
  preparer.submit_job([] { throw std::runtime_error("job failed"); });
  preparer.submit_job([&] { backend.mark("after"); });
  preparer.submit([] { return ops({8}); });
  preparer.wait_idle();
  EXPECT_EQ(backend.log(), (std::vector<std::string>{"after", "op 8"}));
}

TEST(PreparerTest, WaitIdleWaitsForWorkSubmittedFromAJob) {
  // The plan store reads ahead by submitting from jobs on the preparer's thread.
  FakeBackend backend;
  runtime::Preparer preparer(backend);
  preparer.submit_job([&] {
    backend.mark("outer");
    preparer.submit_job([&] { backend.mark("inner"); });
  });
  preparer.wait_idle();
  EXPECT_EQ(backend.log(), (std::vector<std::string>{"outer", "inner"}));
}

TEST(PreparerTest, WaitIdleFromManyThreads) {
  FakeBackend backend;
  runtime::Preparer preparer(backend);
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        preparer.submit([t, i] { return ops({static_cast<double>(t * 100 + i)}); });
        if (i % 5 == 0) preparer.wait_idle();
      }
    });
  for (std::thread& th : threads) th.join();
  preparer.wait_idle();
  EXPECT_EQ(preparer.prepared(), 60u);
  EXPECT_EQ(backend.log().size(), 60u);
}

TEST(PreparerTest, DestructorWithALongQueueStopsAfterTheOpInProgress) {
  FakeBackend backend;
  backend.block_tag_ = 0;
  backend.slow_ = true;  // were the rest prepared, it would take a while, and be counted
  constexpr int kOps = 200;
  std::atomic<bool> later_job_ran{false};
  auto preparer = std::make_unique<runtime::Preparer>(backend);
  preparer->submit([] {
    std::vector<sb::PreparedOp> out;
    for (int i = 0; i < kOps; ++i) out.push_back(make_op(i));
    return out;
  });
  preparer->submit_job([&] { later_job_ran = true; });
  backend.wait_until_blocked();  // op 0 is being prepared
  std::atomic<bool> destroyed{false};
  std::thread destroyer([&] {
    preparer.reset();
    destroyed = true;
  });
  // Give the destructor time to ask the thread to stop; then let the op in progress finish.
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(destroyed.load()) << "the destructor did not wait for the op being prepared";
  backend.release();
  destroyer.join();
  EXPECT_TRUE(backend.block_done());
  const std::size_t seen = backend.log().size();
  EXPECT_GE(seen, 1u);
  EXPECT_LT(seen, static_cast<std::size_t>(kOps)) << "the destructor prepared the whole queue";
  EXPECT_FALSE(later_job_ran.load()) << "the destructor ran queued work";
}

TEST(PreparerTest, DestructorOfAnIdlePreparerReturns) {
  FakeBackend backend;
  {
    runtime::Preparer preparer(backend);
    preparer.submit([] { return ops({1}); });
    preparer.wait_idle();
  }
  { runtime::Preparer never_used(backend); }
  EXPECT_EQ(backend.log(), std::vector<std::string>{"op 1"});
}

}  // namespace
