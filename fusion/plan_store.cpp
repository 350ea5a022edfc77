#include "fusion/plan_store.h"

#include <algorithm>
#include <mutex>
#include <optional>

namespace streamfuse::fusion {

PlanStore::PlanStore(std::size_t max_plans, std::size_t max_explorations)
    : max_plans_(std::max<std::size_t>(1, max_plans)),
      max_explorations_(max_explorations),
      ahead_limit_(std::max<std::size_t>(1, max_plans_ / 8)) {}

void PlanStore::set_persistence(std::shared_ptr<PlanPersistence> persistence) {
  std::unique_lock lock(mutex_);
  persistence_ = std::move(persistence);
}

// First ops whose persisted plans were read; past this many the record starts over (asking again
// costs one directory lookup per op).
constexpr std::size_t kMaxConsulted = 1 << 16;

void PlanStore::set_background(std::function<void(std::function<void()>)> run,
                               std::function<void(const ExecutionPlan&)> read_ahead) {
  std::unique_lock lock(mutex_);
  background_ = std::move(run);
  read_ahead_ = std::move(read_ahead);
}

void PlanStore::set_read_ahead_limit(std::size_t plans) {
  std::unique_lock lock(mutex_);
  ahead_limit_ = plans;
}

bool PlanStore::may_read_ahead_locked() const {
  return ahead_added_ < ahead_limit_ && count_ < max_plans_;
}

void PlanStore::consult(const core::OpDesc& op, std::uint64_t hash, bool ahead) const {
  {
    std::unique_lock lock(mutex_);
    consulted_cv_.wait(lock, [&] { return !consulting_.contains(hash); });
    if (consulted_.contains(hash)) return;
    if (ahead && !may_read_ahead_locked()) return;  // left to be read on demand
    consulting_.insert(hash);
  }
  std::vector<PlanDraft> persisted;
  try {
    persisted = persistence_->load(op);  // no lock held while reading
  } catch (...) {
    std::unique_lock lock(mutex_);
    consulting_.erase(hash);
    consulted_cv_.notify_all();
    throw;
  }
  std::vector<core::OpDesc> next_ops;
  std::vector<PlanRef> added;
  {
    std::unique_lock lock(mutex_);
    consulting_.erase(hash);
    consulted_cv_.notify_all();
    // Reading ahead never makes room: plans that would not fit are dropped, and the op
    // is read again if a segment starts with it. (Its limit may be passed by one op's plans.)
    if (ahead && (ahead_added_ >= ahead_limit_ || count_ + persisted.size() > max_plans_)) return;
    if (consulted_.size() >= kMaxConsulted) consulted_.clear();
    consulted_.insert(hash);
    for (PlanDraft& plan : persisted) {
      for (const core::OpDesc& next : plan.successors)
        if (!consulted_.contains(core::hash_op(next))) next_ops.push_back(next);
      bool changed = false;
      PlanRef stored = add_locked(std::move(plan), changed);
      loaded_ += changed;
      ahead_added_ += ahead && changed;
      if (ahead && read_ahead_) added.push_back(std::move(stored));
    }
  }
  for (const PlanRef& plan : added) read_ahead_(*plan);
  queue_ahead(std::move(next_ops), /*front=*/true);
}

void PlanStore::queue_ahead(std::vector<core::OpDesc> ops, bool front) const {
  if (ops.empty()) return;
  {
    std::unique_lock lock(mutex_);
    if (!background_ || !may_read_ahead_locked()) return;
    ahead_.insert(front ? ahead_.begin() : ahead_.end(), std::make_move_iterator(ops.begin()),
                  std::make_move_iterator(ops.end()));
    if (ahead_running_) return;
    ahead_running_ = true;
  }
  background_([this] { read_next_ahead(); });
}

bool PlanStore::ahead_goes_on_locked() const {
  if (!ahead_.empty() && may_read_ahead_locked()) return true;
  ahead_.clear();
  ahead_running_ = false;
  return false;
}

void PlanStore::read_next_ahead() const {
  std::optional<core::OpDesc> op;
  {
    std::unique_lock lock(mutex_);
    while (!op && ahead_goes_on_locked()) {
      if (!consulted_.contains(core::hash_op(ahead_.front()))) op = std::move(ahead_.front());
      ahead_.pop_front();
    }
    if (!op) return;
  }
  // The next read is a job of its own, even after this one failed (warned about by the caller).
  const auto submit_next = [this] {
    {
      std::unique_lock lock(mutex_);
      if (!ahead_goes_on_locked()) return;
    }
    background_([this] { read_next_ahead(); });
  };
  try {
    consult(*op, core::hash_op(*op), /*ahead=*/true);
  } catch (...) {
    submit_next();
    throw;
  }
  submit_next();
}

PlanTrie::NodeRef PlanStore::root_for(const core::OpDesc& op, std::uint64_t hash) const {
  std::shared_lock lock(mutex_);
  if (persistence_ && !consulted_.contains(hash)) {
    lock.unlock();
    consult(op, hash, false);
    lock.lock();
  }
  return trie_.root();
}

void PlanStore::starting_with(const core::OpDesc& op, PlanRefs& out) const {
  const std::uint64_t hash = core::hash_op(op);
  const PlanTrie::NodeRef root = root_for(op, hash);
  PlanTrie::Cursor at(root.get());
  at.next(op, &hash);
  at.collect(out);
}

PlanRef PlanStore::add(PlanDraft plan) {
  bool changed = false;
  PlanRef stored;
  std::shared_ptr<PlanPersistence> persistence;
  {
    std::unique_lock lock(mutex_);
    stored = add_locked(std::move(plan), changed);
    ++explored_;
    persistence = persistence_;
  }
  if (changed && persistence) persistence->save(stored);
  return stored;
}

void PlanStore::add_loaded(const std::vector<PlanRef>& plans) {
  std::vector<PlanRef> changed_plans;
  std::shared_ptr<PlanPersistence> persistence;
  {
    std::unique_lock lock(mutex_);
    for (const PlanRef& plan : plans) {
      bool changed = false;
      PlanRef stored =
          add_locked({plan->ops, plan->optimization, plan->triggers, plan->successors}, changed);
      if (changed) changed_plans.push_back(std::move(stored)), ++loaded_;
    }
    persistence = persistence_;
  }
  if (persistence)
    for (PlanRef& p : changed_plans) persistence->save(std::move(p));
}

std::vector<PlanRef> PlanStore::plans() const {
  std::shared_lock lock(mutex_);
  std::vector<PlanRef> out;
  out.reserve(count_);
  for (const auto& [hash, bucket] : index_) out.insert(out.end(), bucket.begin(), bucket.end());
  return out;
}

PlanRef PlanStore::add_locked(PlanDraft plan, bool& changed) const {
  changed = false;
  PlanRefs& bucket = index_[core::hash_op(plan.ops.front())];
  for (PlanRef& existing : bucket) {
    if (existing->ops != plan.ops) continue;
    std::vector<Trigger> triggers = existing->triggers;
    std::vector<core::OpDesc> successors = existing->successors;
    if (merge_triggers(triggers, std::move(plan.triggers)) +
            merge_successors(successors, plan.successors) ==
        0)
      return existing;
    auto merged = make_plan(
        {existing->ops, existing->optimization, std::move(triggers), std::move(successors)});
    merged->uses = existing->uses.load();
    merged->last_use = clock_.fetch_add(1);
    existing = merged;
    trie_.put(merged);
    changed = true;
    return merged;
  }
  if (count_ >= max_plans_) {
    evict_one();
  }
  std::shared_ptr<ExecutionPlan> stored = make_plan(std::move(plan));
  stored->last_use = clock_.fetch_add(1);
  index_[core::hash_op(stored->ops.front())].push_back(stored);  // bucket may have moved
  trie_.put(stored);
  ++count_;
  changed = true;
  return stored;
}

void PlanStore::evict_one() const {
  // The least recently used plan. Not the least used: a plan just explored has been used once,
  // so in a full store of plans used more often it went at the next exploration, before its
  // segment came again (a program's plans, explored one after another, evicted each other and
  // were explored again at every run). Linear: eviction is rare (only when exploring into a full
  // store), lookups stay O(1).
  const PlanRef* victim = nullptr;
  std::uint64_t victim_bucket = 0;
  for (auto& [hash, bucket] : index_) {
    for (const PlanRef& p : bucket) {
      if (!victim || p->last_use < (*victim)->last_use) {
        victim = &p;
        victim_bucket = hash;
      }
    }
  }
  if (!victim) return;
  PlanRefs& bucket = index_[victim_bucket];
  const ExecutionPlan* target = victim->get();
  trie_.remove(target->ops);
  bucket.erase(std::find_if(bucket.begin(), bucket.end(),
                            [&](const PlanRef& p) { return p.get() == target; }));
  if (bucket.empty()) index_.erase(victim_bucket);
  --count_;
}

void PlanStore::touch(const ExecutionPlan& plan) {
  plan.uses.fetch_add(1, std::memory_order_relaxed);
  plan.last_use.store(clock_.fetch_add(1, std::memory_order_relaxed), std::memory_order_relaxed);
}

void PlanStore::note_successor(const PlanRef& plan, const core::OpDesc& next, std::uint64_t hash) {
  // Plans are immutable once shared: reading this one's successors needs no lock. A plan that
  // has all it keeps learns no more (a segment followed by ever other ones would otherwise be
  // copied and saved again and again). Known successors are found by hash: a collision only
  // leaves out a read-ahead hint, and the ops themselves, cold in a store of many plans, stay
  // unread.
  if (plan->successors.size() >= kMaxSuccessors) return;
  if (std::find(plan->successor_hashes.begin(), plan->successor_hashes.end(), hash) !=
      plan->successor_hashes.end())
    return;
  PlanRef changed;
  std::shared_ptr<PlanPersistence> persistence;
  {
    std::unique_lock lock(mutex_);
    auto bucket = index_.find(core::hash_op(plan->ops.front()));
    if (bucket == index_.end()) return;  // evicted meanwhile
    for (PlanRef& stored : bucket->second) {
      if (stored->ops != plan->ops) continue;
      // The caller's copy may be older than the stored plan: the cap holds for the stored one.
      if (stored->successors.size() >= kMaxSuccessors) return;
      std::vector<core::OpDesc> successors = stored->successors;
      if (merge_successors(successors, {next}) == 0) return;  // another stream added it
      auto copy =
          make_plan({stored->ops, stored->optimization, stored->triggers, std::move(successors)});
      copy->uses = stored->uses.load();
      copy->last_use = stored->last_use.load();
      stored = copy;
      trie_.put(copy);
      changed = std::move(copy);
      break;
    }
    persistence = persistence_;
  }
  if (changed && persistence) persistence->save(std::move(changed));
}

void PlanStore::note_entry(const core::OpDesc& first) {
  std::shared_ptr<PlanPersistence> persistence;
  {
    std::shared_lock lock(mutex_);
    persistence = persistence_;
  }
  if (persistence) persistence->save_entry(first);
}

void PlanStore::read_ahead_entries() {
  std::shared_ptr<PlanPersistence> persistence;
  {
    std::unique_lock lock(mutex_);
    if (!background_ || !persistence_ || entries_read_) return;
    entries_read_ = true;
    persistence = persistence_;
  }
  // The file is read off the calling thread too. Entries go behind what is queued: a chain
  // being followed is finished first.
  background_([this, persistence] { queue_ahead(persistence->entries(), /*front=*/false); });
}

bool PlanStore::try_explore() {
  std::unique_lock lock(mutex_);
  if (explorations_ >= max_explorations_) return false;
  ++explorations_;
  return true;
}

std::size_t PlanStore::size() const {
  std::shared_lock lock(mutex_);
  return count_;
}

std::uint64_t PlanStore::explorations() const {
  std::shared_lock lock(mutex_);
  return explorations_;
}

std::uint64_t PlanStore::explored() const {
  std::shared_lock lock(mutex_);
  return explored_;
}

std::uint64_t PlanStore::loaded() const {
  std::shared_lock lock(mutex_);
  return loaded_;
}

}  // namespace streamfuse::fusion
