// BackgroundWriter: jobs run on the writer's thread in submission order, a job queued under a key
// is replaced in place by a later one, each runs its delay after it was first submitted, flush()
// runs everything at once, the destructor and the exit handler run what is queued.
#include "cache/background_writer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace sc = streamfuse::cache;
using namespace std::chrono_literals;

namespace {

// A delay no test waits out: only flush() or the destructor runs such a job.
constexpr std::chrono::milliseconds kNever = std::chrono::hours(1);

// What the jobs did, in order, from any thread.
class Recorder {
 public:
  std::function<void()> job(std::string name) {
    return [this, name = std::move(name)] {
      std::lock_guard lock(mutex_);
      done_.push_back(name);
      cv_.notify_all();
    };
  }
  std::vector<std::string> done() const {
    std::lock_guard lock(mutex_);
    return done_;
  }
  // Waits (without a bound that matters) until `n` jobs ran; false if they never did.
  bool wait_for_count(std::size_t n) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, 120s, [&] { return done_.size() >= n; });
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::string> done_;
};

TEST(BackgroundWriterTest, FlushOnAWriterThatNeverGotAJobReturns) {
  sc::BackgroundWriter writer(kNever);
  writer.flush();
  writer.flush();
  SUCCEED();  // a hang here is the failure
}

TEST(BackgroundWriterTest, FlushRunsADelayedJobAtOnce) {
  Recorder rec;
  sc::BackgroundWriter writer(kNever);
  writer.submit(1, rec.job("a"));
  writer.flush();
  EXPECT_EQ(rec.done(), std::vector<std::string>{"a"});
  // Nothing queued any more: flushing again returns and runs nothing twice.
  writer.flush();
  EXPECT_EQ(rec.done(), std::vector<std::string>{"a"});
}

TEST(BackgroundWriterTest, ReplacementUnderOneKeyRunsOnlyTheLatestOnce) {
  Recorder rec;
  sc::BackgroundWriter writer(kNever);
  writer.submit(7, rec.job("v1"));
  writer.submit(7, rec.job("v2"));
  writer.submit(7, rec.job("v3"));
  writer.flush();
  EXPECT_EQ(rec.done(), std::vector<std::string>{"v3"});
}

TEST(BackgroundWriterTest, JobsRunInSubmissionOrderAndAReplacementKeepsItsPlace) {
  Recorder rec;
  sc::BackgroundWriter writer(kNever);
  writer.submit(1, rec.job("k1"));
  writer.submit(2, rec.job("k2 old"));
  writer.submit(3, rec.job("k3"));
  writer.submit(2, rec.job("k2 new"));  // replaces in place: still runs second
  writer.submit(4, rec.job("k4"));
  writer.flush();
  EXPECT_EQ(rec.done(), (std::vector<std::string>{"k1", "k2 new", "k3", "k4"}));
}

TEST(BackgroundWriterTest, AJobDoesNotRunBeforeItsDelayButRunsAfterIt) {
  Recorder rec;
  constexpr auto kDelay = 300ms;
  sc::BackgroundWriter writer(kDelay);
  std::atomic<std::chrono::steady_clock::time_point> ran_at{};
  const auto submitted = std::chrono::steady_clock::now();
  writer.submit(1, [&, job = rec.job("a")] {
    ran_at.store(std::chrono::steady_clock::now());
    job();
  });
  std::this_thread::sleep_for(50ms);
  const bool ran = !rec.done().empty();
  // Only meaningful while the delay has not passed (a slow machine may oversleep): checked after
  // reading, so a job seen to have run did so before its delay.
  if (std::chrono::steady_clock::now() - submitted < kDelay) {
    EXPECT_FALSE(ran) << "the job ran before its delay";
  }
  // Without a flush, the job runs by itself once its delay passed (and never before).
  ASSERT_TRUE(rec.wait_for_count(1));
  EXPECT_GE(ran_at.load() - submitted, kDelay);
  EXPECT_EQ(rec.done(), std::vector<std::string>{"a"});
}

TEST(BackgroundWriterTest, TheDelayCountsFromTheFirstSubmission) {
  // A key submitted again keeps its place and its due time: a job submitted after it under
  // another key (due later) still runs after it.
  Recorder rec;
  sc::BackgroundWriter writer(200ms);
  writer.submit(1, rec.job("k1 old"));
  writer.submit(2, rec.job("k2"));
  writer.submit(1, rec.job("k1 new"));
  ASSERT_TRUE(rec.wait_for_count(2));
  EXPECT_EQ(rec.done(), (std::vector<std::string>{"k1 new", "k2"}));
}

TEST(BackgroundWriterTest, DestructorRunsQueuedJobs) {
  Recorder rec;
  {
    sc::BackgroundWriter writer(kNever);
    writer.submit(1, rec.job("a"));
    writer.submit(2, rec.job("b"));
    writer.submit(1, rec.job("a2"));
    writer.submit(3, rec.job("c"));
  }
  EXPECT_EQ(rec.done(), (std::vector<std::string>{"a2", "b", "c"}));
}

TEST(BackgroundWriterTest, DestructorOfAWriterThatNeverGotAJobReturns) {
  { sc::BackgroundWriter writer(kNever); }
  SUCCEED();  // a hang or a crash here is the failure
}

TEST(BackgroundWriterTest, AKeySubmittedWhileItsJobRunsRunsAgain) {
  // Only a queued job is replaced: one submitted while the key's job runs is queued anew.
  Recorder rec;
  std::mutex m;
  std::condition_variable cv;
  bool started = false, release = false;
  sc::BackgroundWriter writer(0ms);
  writer.submit(5, [&, job = rec.job("first")] {
    std::unique_lock lock(m);
    started = true;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
    job();
  });
  {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return started; });
  }
  writer.submit(5, rec.job("second"));
  {
    std::lock_guard lock(m);
    release = true;
  }
  cv.notify_all();
  writer.flush();
  EXPECT_EQ(rec.done(), (std::vector<std::string>{"first", "second"}));
}

TEST(BackgroundWriterTest, SubmitsFromManyThreadsAllRunOnce) {
  constexpr int kThreads = 4, kPerThread = 50;
  std::mutex m;
  std::vector<int> runs(kThreads * kPerThread, 0);
  {
    sc::BackgroundWriter writer(1ms);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kPerThread; ++i) {
          const int key = t * kPerThread + i;
          writer.submit(static_cast<std::uint64_t>(key), [&, key] {
            std::lock_guard lock(m);
            ++runs[static_cast<std::size_t>(key)];
          });
          if (i % 10 == 0) writer.flush();
        }
      });
    }
    for (std::thread& th : threads) th.join();
    writer.flush();
    std::lock_guard lock(m);
    for (int key = 0; key < kThreads * kPerThread; ++key)
      EXPECT_EQ(runs[static_cast<std::size_t>(key)], 1) << "key " << key;
  }
}

TEST(BackgroundWriterDeathTest, ExitHandlerRunsWhatIsQueued) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // The writer is never destroyed (as the device runtimes' are not): the exit handler flushes it.
  EXPECT_EXIT(
      {
        auto* writer = new sc::BackgroundWriter(kNever);
        writer->submit(1, [] { std::fputs("written at exit\n", stderr); });
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "written at exit");
}

}  // namespace
