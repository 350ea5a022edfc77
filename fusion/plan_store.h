// The plans of one device, shared by its streams: indexed by the hash of their first relative
// op, bounded in number (the least used go first), with a cap on explorations.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <vector>

#include <boost/container/small_vector.hpp>
#include <boost/unordered/unordered_flat_map.hpp>

#include "fusion/plan.h"

namespace streamfuse::fusion {

using PlanRef = std::shared_ptr<const ExecutionPlan>;
using PlanRefs = boost::container::small_vector<PlanRef, 4>;

class PlanStore {
 public:
  PlanStore(std::size_t max_plans, std::size_t max_explorations);

  // Appends to `out` every plan whose first op equals `op` (relative form).
  void starting_with(const stream::OpDesc& op, PlanRefs& out) const;
  // Stores a plan explored by a stream, or, when a plan with the same ops exists, adds the new
  // plan's triggers to it (plans are immutable once shared: the stored plan is replaced by a
  // copy with the trigger added). Returns the plan to run. Evicts the least used plan when full.
  PlanRef add(PlanDraft plan);
  // Counts one use of `plan` (for eviction).
  void touch(const ExecutionPlan& plan);

  // Whether another exploration is allowed, counting it if so. Past the cap, streams run
  // unknown segments op by op instead of exploring them.
  bool try_explore();

  std::size_t size() const;
  std::uint64_t explorations() const;

 private:
  void evict_one();  // requires mutex_ (exclusive)

  mutable std::shared_mutex mutex_;
  std::size_t max_plans_;
  std::size_t max_explorations_;
  std::uint64_t explorations_ = 0;
  std::atomic<std::uint64_t> clock_{0};
  boost::unordered_flat_map<std::uint64_t, PlanRefs> index_;  // hash of first op -> plans
  std::size_t count_ = 0;
};

}  // namespace streamfuse::fusion
