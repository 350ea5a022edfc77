// PlanStore reading ahead: reading a plan from the persistence reads its successors' plans ahead,
// off the calling thread (set_background), along the chain, each first op once, a chain to its
// end before the next entry; within a limit, never evicting; a thread that needs an op being read
// waits for it.
#include <gtest/gtest.h>

#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tests/fusion/plan_store_fixture.h"

namespace core = streamfuse::core;

namespace plan_store_testing {
namespace {

// ---- reading ahead -----------------------------------------------------------------------------

TEST_F(PlanStoreTest, StartingWithReadsTheChainAheadEachFirstOpOnce) {
  persistence_->put(draft(kA, {kB}));
  persistence_->put(draft(kB, {kC}));
  persistence_->put(draft(kC));
  background_.attach(store_);

  const fu::PlanRef a = only(kA);
  ASSERT_TRUE(a);
  EXPECT_EQ(names(a->successors), std::vector<std::string>{"log"});
  EXPECT_EQ(persistence_->loads(kA), 1);
  // B is read off the calling thread: not yet.
  EXPECT_EQ(persistence_->loads(kB), 0);
  EXPECT_EQ(background_.pending(), 1u);
  EXPECT_EQ(store_.size(), 1u);

  EXPECT_EQ(background_.run_all(), 2);  // B, then C (which B's plan names)
  EXPECT_EQ(persistence_->loads(kA), 1);
  EXPECT_EQ(persistence_->loads(kB), 1);
  EXPECT_EQ(persistence_->loads(kC), 1);
  EXPECT_EQ(store_.size(), 3u);
  EXPECT_EQ(store_.loaded(), 3u);
  // Plans read ahead get their kernels read too; the one read on the calling thread does not.
  EXPECT_EQ(background_.read_ahead(), (std::vector<std::string>{"log", "sin"}));

  // Later segments find their plans in memory.
  const fu::PlanRef b = only(kB);
  ASSERT_TRUE(b);
  EXPECT_EQ(names(b->successors), std::vector<std::string>{"sin"});
  EXPECT_TRUE(only(kC));
  EXPECT_EQ(persistence_->loads(kB), 1);
  EXPECT_EQ(persistence_->loads(kC), 1);
  EXPECT_EQ(background_.pending(), 0u);
  EXPECT_EQ(persistence_->total_loads(), 3u);
  // Reading is not learning: nothing was saved.
  EXPECT_TRUE(persistence_->saved().empty());
}

TEST_F(PlanStoreTest, ReadingAheadStartsAtTheEntriesWhenTheDeviceStarts) {
  persistence_->put(draft(kA, {kB}));
  persistence_->put(draft(kB));
  persistence_->put(draft(kC));
  persistence_->save_entry(kA);
  store_.read_ahead_entries();  // no background yet: nothing to do it with
  EXPECT_EQ(persistence_->total_loads(), 0u);
  background_.attach(store_);
  store_.read_ahead_entries();
  EXPECT_EQ(persistence_->total_loads(), 0u) << "off the calling thread";
  // The entries' file, then its one entry (A), then B, which A's plan names.
  EXPECT_EQ(background_.run_all(), 3);
  EXPECT_EQ(persistence_->loads(kA), 1);
  EXPECT_EQ(persistence_->loads(kB), 1);
  EXPECT_EQ(persistence_->loads(kC), 0) << "neither an entry nor a successor";
  EXPECT_EQ(background_.read_ahead(), (std::vector<std::string>{"exp", "log"}));
  // The first segment finds its plan in memory.
  EXPECT_TRUE(only(kA));
  EXPECT_EQ(persistence_->loads(kA), 1);
}

TEST_F(PlanStoreTest, NoteEntryHandsTheOpToThePersistence) {
  store_.note_entry(kB);
  store_.note_entry(kA);
  EXPECT_EQ(persistence_->entries(), (std::vector<core::OpDesc>{kA, kB}));
}

TEST_F(PlanStoreTest, ACycleOfSuccessorsTerminates) {
  persistence_->put(draft(kA, {kB}));
  persistence_->put(draft(kB, {kA}));
  background_.attach(store_);
  EXPECT_TRUE(only(kA));
  background_.run_all();
  EXPECT_EQ(background_.pending(), 0u);
  EXPECT_EQ(persistence_->loads(kA), 1);
  EXPECT_EQ(persistence_->loads(kB), 1);
  EXPECT_EQ(background_.read_ahead(), std::vector<std::string>{"log"});
  EXPECT_TRUE(only(kB));
  EXPECT_EQ(persistence_->total_loads(), 2u);
}

TEST_F(PlanStoreTest, ASelfSuccessorIsNotReadAgain) {
  persistence_->put(draft(kA, {kA}));
  background_.attach(store_);
  EXPECT_TRUE(only(kA));
  background_.run_all();
  EXPECT_EQ(persistence_->loads(kA), 1);
  EXPECT_TRUE(background_.read_ahead().empty());
}

TEST_F(PlanStoreTest, ASuccessorNamedTwiceIsReadOnce) {
  // A -> {B, C}, B -> C: C is named by two plans but read once, and read ahead once.
  persistence_->put(draft(kA, {kB, kC}));
  persistence_->put(draft(kB, {kC}));
  persistence_->put(draft(kC));
  background_.attach(store_);
  EXPECT_TRUE(only(kA));
  background_.run_all();
  EXPECT_EQ(persistence_->loads(kB), 1);
  EXPECT_EQ(persistence_->loads(kC), 1);
  const auto ahead = background_.read_ahead();
  EXPECT_EQ(std::count(ahead.begin(), ahead.end(), "sin"), 1);
  EXPECT_EQ(std::count(ahead.begin(), ahead.end(), "log"), 1);
  EXPECT_EQ(store_.size(), 3u);
}

TEST_F(PlanStoreTest, ASuccessorAlreadyReadOnDemandIsNotReadAhead) {
  persistence_->put(draft(kA, {kB}));
  persistence_->put(draft(kB, {kC}));
  persistence_->put(draft(kC));
  background_.attach(store_);
  EXPECT_TRUE(only(kC));  // on demand, first
  EXPECT_TRUE(only(kA));
  background_.run_all();
  EXPECT_EQ(persistence_->loads(kC), 1);
  EXPECT_EQ(persistence_->loads(kB), 1);
  EXPECT_EQ(background_.read_ahead(), std::vector<std::string>{"log"});
}

TEST_F(PlanStoreTest, WithoutBackgroundPlansAreReadOnlyOnDemand) {
  persistence_->put(draft(kA, {kB}));
  persistence_->put(draft(kB, {kC}));
  persistence_->put(draft(kC));
  EXPECT_TRUE(only(kA));
  EXPECT_EQ(persistence_->loads(kA), 1);
  EXPECT_EQ(persistence_->loads(kB), 0);
  EXPECT_EQ(persistence_->loads(kC), 0);
  EXPECT_EQ(store_.size(), 1u);
  EXPECT_TRUE(only(kB));
  EXPECT_EQ(persistence_->loads(kB), 1);
  EXPECT_EQ(persistence_->loads(kC), 0);
  EXPECT_TRUE(only(kA));
  EXPECT_EQ(persistence_->loads(kA), 1);
}

TEST_F(PlanStoreTest, BackgroundWithoutReadAheadStillReadsTheChain) {
  persistence_->put(draft(kA, {kB}));
  persistence_->put(draft(kB));
  std::vector<std::function<void()>> jobs;
  store_.set_background([&](std::function<void()> job) { jobs.push_back(std::move(job)); });
  EXPECT_TRUE(only(kA));
  ASSERT_EQ(jobs.size(), 1u);
  jobs.front()();
  EXPECT_EQ(persistence_->loads(kB), 1);
  EXPECT_EQ(store_.size(), 2u);
}

TEST_F(PlanStoreTest, APersistedPlanMergesItsSuccessorsIntoAnExploredOne) {
  // Explored in this process before a segment started with A: the persisted plan's successors
  // join it, and are read ahead.
  store_.add(draft(kA));
  persistence_->put(draft(kA, {kB}));
  persistence_->put(draft(kB));
  background_.attach(store_);
  const fu::PlanRef a = only(kA);
  ASSERT_TRUE(a);
  EXPECT_EQ(names(a->successors), std::vector<std::string>{"log"});
  background_.run_all();
  EXPECT_EQ(persistence_->loads(kB), 1);
  EXPECT_EQ(store_.size(), 2u);
}

TEST_F(PlanStoreTest, AFailedReadAheadLeavesTheOpToBeReadOnDemand) {
  persistence_->put(draft(kA, {kB}));
  persistence_->put(draft(kB));
  persistence_->throw_on(kB);
  background_.attach(store_);
  EXPECT_TRUE(only(kA));
  EXPECT_THROW(background_.run_one(), std::runtime_error);
  persistence_->stop_throwing();
  // Nobody is left waiting for B, and it is read again when a segment starts with it.
  EXPECT_TRUE(only(kB));
  EXPECT_EQ(persistence_->loads(kB), 2);
}

TEST_F(PlanStoreTest, AChainIsFollowedToItsEndBeforeTheNextEntry) {
  // Entries A and D; A -> B -> C. Breadth first would read D before B and C: a program's later
  // segments waited behind the first segments of every other program of the cache directory.
  persistence_->put(draft(kA, {kB}));
  persistence_->put(draft(kB, {kC}));
  persistence_->put(draft(kC));
  persistence_->put(draft(kD, {kE}));
  persistence_->put(draft(kE));
  persistence_->save_entry(kD);
  persistence_->save_entry(kA);  // the most recent first
  background_.attach(store_);
  store_.read_ahead_entries();
  EXPECT_EQ(background_.run_all(), 6);  // the entries' file, then one job per first op
  EXPECT_EQ(background_.read_ahead(),
            (std::vector<std::string>{"exp", "log", "sin", "cos", "tanh"}));
}

TEST_F(PlanStoreTest, TheSuccessorsOfAPlanReadOnDemandGoBeforeQueuedEntries) {
  persistence_->put(draft(kA));
  persistence_->put(draft(kB));
  persistence_->put(draft(kC, {kD}));
  persistence_->put(draft(kD));
  persistence_->save_entry(kB);
  persistence_->save_entry(kA);
  background_.attach(store_);
  store_.read_ahead_entries();
  ASSERT_TRUE(background_.run_one());  // the entries' file: A and B queued
  EXPECT_TRUE(only(kC));               // a segment starts with C: its successor D comes first
  background_.run_all();
  EXPECT_EQ(background_.read_ahead(), (std::vector<std::string>{"cos", "exp", "log"}));
}

TEST_F(PlanStoreTest, TheEntriesAreReadAheadOnce) {
  persistence_->put(draft(kA));
  persistence_->save_entry(kA);
  background_.attach(store_);
  store_.read_ahead_entries();
  store_.read_ahead_entries();  // fusion switched on again, say
  EXPECT_EQ(background_.run_all(), 2);
  store_.read_ahead_entries();
  EXPECT_EQ(background_.pending(), 0u);
  EXPECT_EQ(persistence_->loads(kA), 1);
}

TEST_F(PlanStoreTest, ReadingAheadStopsAtItsLimitAndLeavesTheRestToDemand) {
  // A -> B -> C -> D, two plans ahead at most: B and C. A was read on demand (not counted).
  persistence_->put(draft(kA, {kB}));
  persistence_->put(draft(kB, {kC}));
  persistence_->put(draft(kC, {kD}));
  persistence_->put(draft(kD));
  store_.set_read_ahead_limit(2);
  background_.attach(store_);
  EXPECT_TRUE(only(kA));
  EXPECT_EQ(background_.run_all(), 2);
  EXPECT_EQ(background_.read_ahead(), (std::vector<std::string>{"log", "sin"}));
  EXPECT_EQ(persistence_->loads(kD), 0);
  EXPECT_EQ(store_.size(), 3u);
  // D is read when a segment starts with it, as without reading ahead, and its successors are
  // not read ahead any more.
  EXPECT_TRUE(only(kD));
  EXPECT_EQ(persistence_->loads(kD), 1);
  EXPECT_EQ(background_.pending(), 0u);
}

TEST_F(PlanStoreTest, ReadingAheadNeverEvicts) {
  fu::PlanStore store(2, 100);
  store.set_persistence(persistence_);
  store.set_read_ahead_limit(100);  // the store's size is what stops it
  persistence_->put(draft(kA, {kB}));
  persistence_->put(draft(kB, {kC}));
  persistence_->put(draft(kC));
  background_.attach(store);
  fu::PlanRefs found;
  store.starting_with(kA, found);
  background_.run_all();
  // B filled the store; C would have evicted A, which a segment ran just now. It is not even
  // read.
  EXPECT_EQ(background_.read_ahead(), std::vector<std::string>{"log"});
  EXPECT_EQ(persistence_->loads(kC), 0);
  EXPECT_EQ(store.size(), 2u);
  found.clear();
  store.starting_with(kA, found);
  EXPECT_EQ(found.size(), 1u);
  EXPECT_EQ(persistence_->loads(kA), 1);
  // On demand, a plan is read into a full store as an explored one is added: the least recently
  // used goes.
  found.clear();
  store.starting_with(kC, found);
  EXPECT_EQ(found.size(), 1u);
  EXPECT_EQ(store.size(), 2u);
}

TEST_F(PlanStoreTest, PlansReadAheadThatWouldNotFitAreDropped) {
  fu::PlanStore store(2, 100);
  store.set_persistence(persistence_);
  store.set_read_ahead_limit(100);
  persistence_->put(draft(kA, {kB}));
  persistence_->put(draft(kB));
  fu::PlanDraft longer = draft(kB);
  longer.ops.push_back(kC);
  persistence_->put(std::move(longer));
  background_.attach(store);
  fu::PlanRefs found;
  store.starting_with(kA, found);
  background_.run_all();
  // B's two plans were read, but one place was left: neither is kept, A stays.
  EXPECT_EQ(persistence_->loads(kB), 1);
  EXPECT_TRUE(background_.read_ahead().empty());
  EXPECT_EQ(store.size(), 1u);
  found.clear();
  store.starting_with(kB, found);  // read again on demand, which makes room
  EXPECT_EQ(persistence_->loads(kB), 2);
  EXPECT_EQ(found.size(), 2u);
}

TEST_F(PlanStoreTest, ReadAheadOnAnotherThread) {
  persistence_->put(draft(kA, {kB}));
  persistence_->put(draft(kB, {kC}));
  persistence_->put(draft(kC, {kD}));
  persistence_->put(draft(kD));
  std::mutex m;
  std::vector<std::thread> threads;
  std::vector<std::string> ahead;
  store_.set_background(
      [&](std::function<void()> job) {
        std::lock_guard lock(m);
        threads.emplace_back(std::move(job));
      },
      [&](const fu::ExecutionPlan& plan) {
        std::lock_guard lock(m);
        ahead.push_back(name(plan.ops.front()));
      });
  EXPECT_TRUE(only(kA));
  // Each job may start the next: join until none is left.
  for (;;) {
    std::vector<std::thread> batch;
    {
      std::lock_guard lock(m);
      batch.swap(threads);
    }
    if (batch.empty()) break;
    for (std::thread& t : batch) t.join();
  }
  EXPECT_EQ(ahead, (std::vector<std::string>{"log", "sin", "cos"}));
  for (const core::OpDesc& o : {kA, kB, kC, kD}) EXPECT_EQ(persistence_->loads(o), 1) << name(o);
  EXPECT_EQ(store_.size(), 4u);
  EXPECT_TRUE(only(kD));
  EXPECT_EQ(persistence_->total_loads(), 4u);
}

TEST_F(PlanStoreTest, AThreadStartingWithAnOpBeingReadWaitsForIt) {
  persistence_->put(draft(kA));
  persistence_->block(kA);
  fu::PlanRefs first, second;
  std::thread reader([&] { store_.starting_with(kA, first); });
  persistence_->wait_until_blocked();
  std::thread waiter([&] { store_.starting_with(kA, second); });
  std::this_thread::sleep_for(50ms);  // lets `waiter` reach the wait (passes either way)
  persistence_->release();
  reader.join();
  waiter.join();
  EXPECT_EQ(persistence_->loads(kA), 1);
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(second.size(), 1u);  // waited for the read instead of finding nothing
  EXPECT_EQ(first.front(), second.front());
}

TEST_F(PlanStoreTest, StartingWithAnOpBeingReadAheadWaitsForIt) {
  persistence_->put(draft(kA, {kB}));
  persistence_->put(draft(kB));
  persistence_->block(kB);
  background_.attach(store_);
  EXPECT_TRUE(only(kA));
  std::thread ahead([&] { background_.run_all(); });
  persistence_->wait_until_blocked();
  fu::PlanRefs found;
  std::thread segment([&] { store_.starting_with(kB, found); });
  std::this_thread::sleep_for(50ms);
  persistence_->release();
  ahead.join();
  segment.join();
  EXPECT_EQ(persistence_->loads(kB), 1);
  EXPECT_EQ(found.size(), 1u);
  EXPECT_EQ(background_.read_ahead(), std::vector<std::string>{"log"});
}

}  // namespace
}  // namespace plan_store_testing
