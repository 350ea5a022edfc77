#include "fusion/plan_store.h"

#include <algorithm>
#include <mutex>

namespace streamfuse::fusion {

PlanStore::PlanStore(std::size_t max_plans, std::size_t max_explorations)
    : max_plans_(std::max<std::size_t>(1, max_plans)), max_explorations_(max_explorations) {}

void PlanStore::starting_with(const stream::OpDesc& op, PlanRefs& out) const {
  std::shared_lock lock(mutex_);
  auto it = index_.find(stream::hash_op(op));
  if (it == index_.end()) return;
  for (const PlanRef& p : it->second)
    if (p->ops.front() == op) out.push_back(p);
}

PlanRef PlanStore::add(PlanDraft plan) {
  std::unique_lock lock(mutex_);
  PlanRefs& bucket = index_[stream::hash_op(plan.ops.front())];
  for (PlanRef& existing : bucket) {
    if (existing->ops != plan.ops) continue;
    auto merged = std::make_shared<ExecutionPlan>();
    merged->ops = existing->ops;
    merged->optimization = existing->optimization;
    merged->triggers = existing->triggers;
    for (Trigger& t : plan.triggers)
      if (std::find(merged->triggers.begin(), merged->triggers.end(), t) == merged->triggers.end())
        merged->triggers.push_back(std::move(t));
    merged->uses = existing->uses.load();
    merged->last_use = clock_.fetch_add(1);
    existing = merged;
    return merged;
  }
  if (count_ >= max_plans_) {
    evict_one();
  }
  auto stored = std::make_shared<ExecutionPlan>();
  stored->ops = std::move(plan.ops);
  stored->optimization = std::move(plan.optimization);
  stored->triggers = std::move(plan.triggers);
  stored->last_use = clock_.fetch_add(1);
  index_[stream::hash_op(stored->ops.front())].push_back(stored);  // bucket may have moved
  ++count_;
  return stored;
}

void PlanStore::evict_one() {
  // The least used plan, the least recently used among equals. Linear: eviction is rare (only
  // when exploring into a full store), lookups stay O(1).
  const PlanRef* victim = nullptr;
  std::uint64_t victim_bucket = 0;
  for (auto& [hash, bucket] : index_) {
    for (const PlanRef& p : bucket) {
      if (!victim || p->uses < (*victim)->uses ||
          (p->uses == (*victim)->uses && p->last_use < (*victim)->last_use)) {
        victim = &p;
        victim_bucket = hash;
      }
    }
  }
  if (!victim) return;
  PlanRefs& bucket = index_[victim_bucket];
  const ExecutionPlan* target = victim->get();
  bucket.erase(std::find_if(bucket.begin(), bucket.end(),
                            [&](const PlanRef& p) { return p.get() == target; }));
  if (bucket.empty()) index_.erase(victim_bucket);
  --count_;
}

void PlanStore::touch(const ExecutionPlan& plan) {
  plan.uses.fetch_add(1, std::memory_order_relaxed);
  plan.last_use.store(clock_.fetch_add(1, std::memory_order_relaxed), std::memory_order_relaxed);
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

}  // namespace streamfuse::fusion
