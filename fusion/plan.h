// ExecutionPlan: what to do with a segment that starts with these ops. Stored in the device's
// PlanStore and matched by the Policy against each stream's queue.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/container/static_vector.hpp>

#include "core/ir.h"
#include "fusion/context.h"
#include "fusion/optimization.h"
#include "fusion/segment.h"

namespace streamfuse::fusion {

// When a plan whose ops all matched may run.
struct Trigger {
  enum class Kind : std::uint8_t {
    kOnOperations,  // once the ops after the plan's are `ops` (the ops that closed exploration)
    kOnSync,        // when the stream must run everything
    kAlways,        // at once
  };
  Kind kind = Kind::kAlways;
  std::vector<core::OpDesc> ops;  // relative form, numbered on from the plan's ops

  friend bool operator==(const Trigger&, const Trigger&) = default;
};

// Triggers a plan keeps: a segment explored after many different continuations would otherwise
// collect one per continuation. Past it the oldest trigger goes (it may be learned again).
inline constexpr std::size_t kMaxTriggers = 64;

// Successors a plan keeps: the first ops of the segments that ran after it, newest last.
inline constexpr std::size_t kMaxSuccessors = 4;

// A plan as exploration makes it, before the store shares it.
struct PlanDraft {
  std::vector<core::OpDesc> ops;
  std::shared_ptr<Optimization> optimization;
  std::vector<Trigger> triggers;
  std::vector<core::OpDesc> successors;
};

struct ExecutionPlan {
  std::vector<core::OpDesc> ops;  // relative form of the segment's first ops
  // Null: the Operations strategy (run the ops one by one). Else it covers all of `ops`.
  std::shared_ptr<Optimization> optimization;
  std::vector<Trigger> triggers;
  // The first ops (relative form) of the segments that ran after this one: when the store reads
  // this plan from disk, it reads theirs ahead, off the calling thread.
  std::vector<core::OpDesc> successors;
  // core::hash_op of each successor, in order (make_plan lists them): what note_successor
  // compares a segment's first op with after every run, a few bytes in the plan itself instead
  // of the ops' hundreds each.
  boost::container::static_vector<std::uint64_t, kMaxSuccessors> successor_hashes;
  // Use statistics for eviction (updated from any stream).
  mutable std::atomic<std::uint64_t> uses{0};
  mutable std::atomic<std::uint64_t> last_use{0};

  std::size_t len() const { return ops.size(); }
};

// Adds to `into` the triggers of `more` it lacks; past kMaxTriggers the oldest go. Returns how
// many were added.
std::size_t merge_triggers(std::vector<Trigger>& into, std::vector<Trigger> more);

// Adds to `into` the successors of `more` it lacks; past kMaxSuccessors the oldest go. Returns
// how many were added.
std::size_t merge_successors(std::vector<core::OpDesc>& into,
                             const std::vector<core::OpDesc>& more);

// The plan a draft describes (its triggers and successors deduplicated and capped, the
// successors' hashes listed).
std::shared_ptr<ExecutionPlan> make_plan(PlanDraft draft);

// Runs `plan` on the segment `context` shows: its optimization, or its ops one by one when it has
// none or the optimization threw (nothing changed then: optimizations are all or nothing; the
// error is warned once). Returns that error, if any.
std::optional<std::string> run_plan(const ExecutionPlan& plan, ExecutionContext& context);

// Checks a matched plan against the segment's real sizes: relative size ids that were one size
// at exploration must be one size now, and different ids different sizes (id 0 is size 1).
// Relative forms make this hold by construction: a plan matches only a segment whose relative
// ops equal its own, and plans read from files are checked to be relative forms. So the
// processor asserts it (in builds with asserts, the sanitizer builds) instead of paying for it
// at every match; tests call it on queues forged past the converter.
bool bindings_match(const ExecutionPlan& plan, const SegmentQueue& queue);

}  // namespace streamfuse::fusion
