// Policy: decides, after each op of a segment, whether to wait, explore, or run a stored plan.
//
// Matching: the candidates are the stored plans whose ops start with the segment's, those under
// one place in the store's prefix tree (PlanTrie). The segment's first op finds its place from
// the store's root; each later op moves it on by one lookup, whatever the number of plans. A plan
// whose ops all matched (the one ending at the place) becomes available and waits for one of its
// triggers, checked per op against the (few) available plans.
//
// Invariants:
// - every plan under at_ starts with the segment's num_ops() ops; none elsewhere does;
// - every available plan's ops are a prefix of the segment;
// - found() is an available plan whose trigger fired (the longest such).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "fusion/plan_store.h"

namespace streamfuse::fusion {

enum class ExecutionMode : std::uint8_t {
  kLazy,  // more ops will come: waiting is allowed
  kSync,  // everything queued must run now: never defer, never fail for lack of a plan
};

struct Action {
  enum class Kind : std::uint8_t { kDefer, kExplore, kExecute };
  Kind kind = Kind::kDefer;
  PlanRef plan;  // kExecute
};

class Policy {
 public:
  // Takes the segment's next op (relative form).
  void update(const PlanStore& store, const core::OpDesc& op);
  // What to do now.
  Action action(ExecutionMode mode) const;
  // Starts a new segment.
  void reset();
  std::size_t num_ops() const { return num_ops_; }
  // core::hash_op of the segment's first op (once update had it).
  std::uint64_t first_hash() const { return first_hash_; }

 private:
  struct Available {
    PlanRef plan;
    // Per trigger, whether it may still fire: kOnOperations while the ops after the plan match
    // its ops, kOnSync until an op follows the plan (lazy mode then waits for the sync).
    boost::container::small_vector<std::uint8_t, 4> alive;
  };
  void check_triggers(const core::OpDesc& op);
  // The plan of node_, whose ops all matched, becomes available.
  void promote(const PlanRef& plan);

  // The tree as the segment's first op found it: it holds the nodes at_ walks (nodes are
  // immutable), so that a step costs no reference count.
  PlanTrie::NodeRef root_;
  PlanTrie::Cursor at_;  // nowhere: no stored plan starts with the segment
  boost::container::small_vector<Available, 4> availables_;
  PlanRef found_;
  std::size_t num_ops_ = 0;
  std::uint64_t first_hash_ = 0;
};

}  // namespace streamfuse::fusion
