// The plans of one device, shared by its streams: indexed by the hash of their first relative
// op, and kept in a prefix tree of their ops that the policy matches segments against
// (plan_trie.h; its edges share one copy of each distinct op), bounded in number (the least
// recently used go first), with a cap on explorations. With a PlanPersistence, the plans starting
// with an op are read from it the first time a segment starts with that op (never in bulk), and
// every new plan is handed to it to be saved. Plans remember which segments followed them; reading
// a plan from disk reads theirs ahead on a background thread (given by set_background), so a
// program's later segments find their plans in memory; reading ahead starts, when the device
// starts, at the persistence's entries (the segments earlier processes started with).
//
// Reading ahead is a guess, and a cache directory that many programs share links their plans
// through common ops: followed without end it read every plan of the directory, on a core, for
// seconds (8,000 plans, evicting as it went once the store was full). So it follows a program's
// chain to its end before the next entry (the successors of a plan just read come first), adds at
// most read_ahead_limit() plans in the store's life, and never evicts: whatever it leaves is read
// on demand, as without it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <shared_mutex>
#include <vector>

#include <boost/container/small_vector.hpp>
#include <boost/unordered/unordered_flat_map.hpp>
#include <boost/unordered/unordered_flat_set.hpp>

#include "fusion/plan.h"
#include "fusion/plan_persistence.h"
#include "fusion/plan_trie.h"

namespace streamfuse::fusion {

using PlanRef = std::shared_ptr<const ExecutionPlan>;
using PlanRefs = boost::container::small_vector<PlanRef, 4>;

class PlanStore {
 public:
  PlanStore(std::size_t max_plans, std::size_t max_explorations);

  // Set once, before streams use the store.
  void set_persistence(std::shared_ptr<PlanPersistence> persistence);
  // Set once, before streams use the store: runs a job off the calling thread (reads ahead), and
  // what to do there with each plan read ahead (load its kernels).
  void set_background(std::function<void(std::function<void()>)> run,
                      std::function<void(const ExecutionPlan&)> read_ahead = {});
  // The most plans reading ahead adds over the store's life (default: an eighth of its
  // capacity). Set before streams use the store.
  void set_read_ahead_limit(std::size_t plans);
  std::size_t read_ahead_limit() const { return ahead_limit_; }

  // Appends to `out` every plan whose first op equals `op` (relative form). The first time for
  // an op, reads the persisted plans that start with it.
  void starting_with(const core::OpDesc& op, PlanRefs& out) const;
  // The root of the plans' prefix tree once the plans that start with `op` (relative form;
  // core::hash_op of it is `hash`) are in it: a segment is matched from there, one lookup per
  // op (PlanTrie), while the caller holds it. The first time for an op, reads the persisted plans
  // that start with it.
  PlanTrie::NodeRef root_for(const core::OpDesc& op, std::uint64_t hash) const;
  // Stores a plan explored by a stream, or, when a plan with the same ops exists, adds the new
  // plan's triggers to it (plans are immutable once shared: the stored plan is replaced by a
  // copy with the trigger added), and has the persistence save it when it changed. Returns the
  // plan to run. Evicts the least recently used plan when full.
  PlanRef add(PlanDraft plan);
  // Adds plans made elsewhere (a bundle) as add() does; counted as loaded, not explored.
  void add_loaded(const std::vector<PlanRef>& plans);
  // Every stored plan (for bundles).
  std::vector<PlanRef> plans() const;
  // Counts one use of `plan` (for eviction).
  void touch(const ExecutionPlan& plan);
  // Records that a segment starting with `next` (relative form) ran after `plan`; a new
  // successor replaces the stored plan with a copy that has it, and is saved. Cheap when known.
  // `hash` is core::hash_op(next) (the policy has it for a segment's first op).
  void note_successor(const PlanRef& plan, const core::OpDesc& next, std::uint64_t hash);
  // Records that a stream's first segment with a plan started with `first` (relative form): the
  // persistence keeps it among its entries (plan_persistence.h).
  void note_entry(const core::OpDesc& first);
  // Reads ahead, in the background, the plans that start with the persistence's entries, and
  // on along their successors. Called after set_persistence and set_background, when the device
  // starts (or fusion is switched on); without either it does nothing, and after it did, nothing
  // again.
  void read_ahead_entries();

  // Whether another exploration is allowed, counting it if so. Past the cap, streams run
  // unknown segments op by op instead of exploring them.
  bool try_explore();

  std::size_t size() const;
  // The most plans it holds; past it the least recently used goes.
  std::size_t capacity() const { return max_plans_; }
  std::uint64_t explorations() const;  // explorations started (what the cap counts)
  std::uint64_t explored() const;      // plans made by exploring: add() calls
  std::uint64_t loaded() const;        // plans read from the persistence or added by add_loaded

 private:
  // add() under mutex_ (exclusive); `changed` when the store's plans changed.
  PlanRef add_locked(PlanDraft plan, bool& changed) const;
  // Reads the persisted plans that start with `op` (hash `hash`) unless that was done, or waits
  // while another thread does it; then reads ahead their successors' plans in the background.
  // `ahead`: this is that background work (the plans' kernels are read ahead too).
  void consult(const core::OpDesc& op, std::uint64_t hash, bool ahead) const;
  // Queues first ops to be read ahead (`front`: before those queued, in their order) and starts
  // the background job that reads them, unless it runs.
  void queue_ahead(std::vector<core::OpDesc> ops, bool front) const;
  // The background job: reads the first op queued, then submits itself again while any is left.
  void read_next_ahead() const;
  // Whether reading ahead may add plans: its limit not reached, the store not full. Requires
  // mutex_.
  bool may_read_ahead_locked() const;
  // Whether the background job reads another op; if not, drops what is queued and lets the next
  // queue_ahead submit a job again. Requires mutex_ (exclusive).
  bool ahead_goes_on_locked() const;
  void evict_one() const;  // requires mutex_ (exclusive)

  mutable std::shared_mutex mutex_;
  std::size_t max_plans_;
  std::size_t max_explorations_;
  std::uint64_t explorations_ = 0;
  std::uint64_t explored_ = 0;
  mutable std::atomic<std::uint64_t> clock_{0};
  // Filled lazily from the persistence by starting_with(), hence mutable.
  // The plans twice: by the hash of their first op, for adding, updating and evicting them (a
  // full store evicts at every exploration, and walking the tree's nodes for the least recently
  // used plan took milliseconds each: the differential test ran 20 times longer), and by their ops,
  // for matching.
  mutable boost::unordered_flat_map<std::uint64_t, PlanRefs> index_;  // hash of first op -> plans
  mutable PlanTrie trie_;  // the same plans, by their ops
  mutable std::size_t count_ = 0;
  mutable std::uint64_t loaded_ = 0;
  std::shared_ptr<PlanPersistence> persistence_;
  mutable boost::unordered_flat_set<std::uint64_t> consulted_;   // first-op hashes asked about
  mutable boost::unordered_flat_set<std::uint64_t> consulting_;  // being read by some thread
  mutable std::condition_variable_any consulted_cv_;
  std::function<void(std::function<void()>)> background_;
  std::function<void(const ExecutionPlan&)> read_ahead_;
  // Reading ahead, under mutex_: the first ops waiting, the next at the front; whether the job
  // that reads them is submitted or running (one at a time, so that other work submitted to the
  // same thread, such as preparing the op a stream waits for, runs between two reads); the plans
  // it added; whether the entries were queued.
  mutable std::deque<core::OpDesc> ahead_;
  mutable bool ahead_running_ = false;
  mutable std::size_t ahead_added_ = 0;
  std::size_t ahead_limit_;
  bool entries_read_ = false;
};

}  // namespace streamfuse::fusion
