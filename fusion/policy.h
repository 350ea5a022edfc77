// Policy: decides, after each op of a segment, whether to wait, explore, or run a stored plan.
//
// Candidate invalidation: at the segment's first op the candidates are the stored plans that
// start with it; each later op drops the candidates that differ at its position. A candidate
// whose ops all matched becomes available and waits for one of its triggers. The cost of an op
// is proportional to the live candidates, never to plan length.
//
// Invariants:
// - every candidate's first num_ops() ops equal the segment's;
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

 private:
  struct Available {
    PlanRef plan;
    // Per trigger, whether it may still fire: kOnOperations while the ops after the plan match
    // its ops, kOnSync until an op follows the plan (lazy mode then waits for the sync).
    boost::container::small_vector<std::uint8_t, 4> alive;
  };
  void check_triggers(const core::OpDesc& op);
  void promote_complete();

  PlanRefs candidates_;
  boost::container::small_vector<Available, 4> availables_;
  PlanRef found_;
  std::size_t num_ops_ = 0;
};

}  // namespace streamfuse::fusion
