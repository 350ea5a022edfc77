// The fixtures of the PlanStore tests: relative unary ops by name, one-op plan drafts, a fake
// PlanPersistence (plans by first op, loads counted, saves recorded, loads that block or throw on
// demand), a Background that runs read-ahead jobs when the test says, and the PlanStoreTest
// fixture.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/ir.h"
#include "fusion/plan.h"
#include "fusion/plan_persistence.h"

#include "fusion/plan_store.h"

namespace core = streamfuse::core;

namespace plan_store_testing {

namespace fu = streamfuse::fusion;
using namespace std::chrono_literals;

// A relative unary op: `kind` of tensor 0 ([size id 1], f32) into tensor 1.
inline core::OpDesc op(core::OpKind kind) {
  core::OpDesc o;
  o.kind = kind;
  o.inputs.push_back({0, streamfuse::Shape{1}, streamfuse::kF32, core::TensorStatus::kReadOnly});
  o.outputs.push_back({1, streamfuse::Shape{1}, streamfuse::kF32, core::TensorStatus::kNotInit});
  return o;
}

inline const core::OpDesc kA = op(core::OpKind::kExp);
inline const core::OpDesc kB = op(core::OpKind::kLog);
inline const core::OpDesc kC = op(core::OpKind::kSin);
inline const core::OpDesc kD = op(core::OpKind::kCos);
inline const core::OpDesc kE = op(core::OpKind::kTanh);
inline const core::OpDesc kF = op(core::OpKind::kNeg);

inline std::string name(const core::OpDesc& o) { return std::string(core::op_name(o.kind)); }
inline std::vector<std::string> names(const std::vector<core::OpDesc>& ops) {
  std::vector<std::string> out;
  for (const core::OpDesc& o : ops) out.push_back(name(o));
  return out;
}

// A one-op plan starting with `first`, run op by op, followed before by `successors`.
inline fu::PlanDraft draft(const core::OpDesc& first, std::vector<core::OpDesc> successors = {}) {
  fu::PlanDraft d;
  d.ops.push_back(first);
  d.triggers.push_back({fu::Trigger::Kind::kAlways, {}});
  d.successors = std::move(successors);
  return d;
}

// Plans by first op, counting load() calls per first op and recording saves; entries in memory.
// load() of the op set by block() waits until release().
class FakePersistence final : public fu::PlanPersistence {
 public:
  void put(fu::PlanDraft d) {
    std::lock_guard lock(mutex_);
    drafts_.push_back(std::move(d));
  }
  std::vector<fu::PlanDraft> load(const core::OpDesc& first) override {
    std::unique_lock lock(mutex_);
    loads_.push_back(first);
    if (throw_on_ && *throw_on_ == first) throw std::runtime_error("unreadable plan file");
    if (block_ && *block_ == first) {
      blocked_ = true;
      cv_.notify_all();
      cv_.wait(lock, [&] { return released_; });
    }
    std::vector<fu::PlanDraft> out;
    for (const fu::PlanDraft& d : drafts_)
      if (d.ops.front() == first) out.push_back(d);
    return out;
  }
  void save(std::shared_ptr<const fu::ExecutionPlan> plan) override {
    std::lock_guard lock(mutex_);
    saved_.push_back(std::move(plan));
  }
  std::vector<core::OpDesc> entries() override {
    std::lock_guard lock(mutex_);
    return entries_;
  }
  void save_entry(const core::OpDesc& first) override {
    std::lock_guard lock(mutex_);
    entries_.insert(entries_.begin(), first);
  }

  int loads(const core::OpDesc& first) const {
    std::lock_guard lock(mutex_);
    return static_cast<int>(std::count(loads_.begin(), loads_.end(), first));
  }
  std::size_t total_loads() const {
    std::lock_guard lock(mutex_);
    return loads_.size();
  }
  std::vector<std::shared_ptr<const fu::ExecutionPlan>> saved() const {
    std::lock_guard lock(mutex_);
    return saved_;
  }
  void throw_on(const core::OpDesc& first) {
    std::lock_guard lock(mutex_);
    throw_on_ = first;
  }
  void stop_throwing() {
    std::lock_guard lock(mutex_);
    throw_on_.reset();
  }
  void block(const core::OpDesc& first) {
    std::lock_guard lock(mutex_);
    block_ = first;
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

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<fu::PlanDraft> drafts_;
  std::vector<core::OpDesc> loads_;
  std::vector<core::OpDesc> entries_;  // most recent first
  std::vector<std::shared_ptr<const fu::ExecutionPlan>> saved_;
  std::optional<core::OpDesc> throw_on_, block_;
  bool blocked_ = false, released_ = false;
};

// The background jobs a store hands out, run when the test says; and the plans read ahead.
class Background {
 public:
  void attach(fu::PlanStore& store) {
    store.set_background(
        [this](std::function<void()> job) {
          std::lock_guard lock(mutex_);
          jobs_.push_back(std::move(job));
        },
        [this](const fu::ExecutionPlan& plan) {
          std::lock_guard lock(mutex_);
          read_ahead_.push_back(name(plan.ops.front()));
        });
  }
  std::size_t pending() const {
    std::lock_guard lock(mutex_);
    return jobs_.size();
  }
  // Runs the oldest job; false when there was none.
  bool run_one() {
    std::function<void()> job;
    {
      std::lock_guard lock(mutex_);
      if (jobs_.empty()) return false;
      job = std::move(jobs_.front());
      jobs_.erase(jobs_.begin());
    }
    job();
    return true;
  }
  // Runs jobs (and the jobs they submit) until none is left; returns how many ran.
  int run_all() {
    int n = 0;
    while (run_one()) {
      if (++n > 1000) {
        ADD_FAILURE() << "read-ahead does not terminate";
        break;
      }
    }
    return n;
  }
  std::vector<std::string> read_ahead() const {
    std::lock_guard lock(mutex_);
    return read_ahead_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::function<void()>> jobs_;
  std::vector<std::string> read_ahead_;
};

class PlanStoreTest : public ::testing::Test {
 protected:
  PlanStoreTest() : store_(64, 1000), persistence_(std::make_shared<FakePersistence>()) {
    store_.set_persistence(persistence_);
  }
  fu::PlanRef only(const core::OpDesc& first) {
    fu::PlanRefs out;
    store_.starting_with(first, out);
    if (out.size() != 1) {
      ADD_FAILURE() << out.size() << " plans start with " << name(first);
      return nullptr;
    }
    return out.front();
  }

  fu::PlanStore store_;
  std::shared_ptr<FakePersistence> persistence_;
  Background background_;
};

}  // namespace plan_store_testing
