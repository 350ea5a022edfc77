#include "fusion/policy.h"

#include <algorithm>

namespace streamfuse::fusion {

void Policy::reset() {
  candidates_.clear();
  availables_.clear();
  found_.reset();
  num_ops_ = 0;
}

void Policy::update(const PlanStore& store, const core::OpDesc& op) {
  const std::size_t i = num_ops_;
  check_triggers(op);
  if (i == 0) {
    store.starting_with(op, candidates_);
  } else {
    candidates_.erase(std::remove_if(candidates_.begin(), candidates_.end(),
                                     [&](const PlanRef& p) { return p->ops[i] != op; }),
                      candidates_.end());
  }
  ++num_ops_;
  promote_complete();
}

// An available plan of length L waits on ops[L..): op i is the (i - L)-th op after the plan.
void Policy::check_triggers(const core::OpDesc& op) {
  for (Available& a : availables_) {
    const std::size_t after = num_ops_ - a.plan->len();
    for (std::size_t t = 0; t < a.plan->triggers.size(); ++t) {
      const Trigger& trigger = a.plan->triggers[t];
      if (!a.alive[t]) continue;
      if (trigger.kind == Trigger::Kind::kOnSync) {  // an op came after the plan: no sync yet
        a.alive[t] = 0;
        continue;
      }
      if (after >= trigger.ops.size() || trigger.ops[after] != op) {
        a.alive[t] = 0;
      } else if (after + 1 == trigger.ops.size() && (!found_ || found_->len() < a.plan->len())) {
        found_ = a.plan;
      }
    }
  }
  // An available plan none of whose triggers can fire any more stays: sync mode may run it.
}

void Policy::promote_complete() {
  for (auto it = candidates_.begin(); it != candidates_.end();) {
    const PlanRef& p = *it;
    if (p->len() != num_ops_) {
      ++it;
      continue;
    }
    Available a{p, {}};
    for (const Trigger& t : p->triggers) {
      a.alive.push_back(t.kind == Trigger::Kind::kAlways ? 0 : 1);
      if (t.kind == Trigger::Kind::kAlways && (!found_ || found_->len() < p->len())) found_ = p;
    }
    availables_.push_back(std::move(a));
    it = candidates_.erase(it);
  }
}

Action Policy::action(ExecutionMode mode) const {
  if (found_) return {Action::Kind::kExecute, found_};
  if (mode == ExecutionMode::kSync) {
    // Everything must run: the longest plan that fully matched, else explore.
    const Available* best = nullptr;
    for (const Available& a : availables_)
      if (!best || a.plan->len() > best->plan->len()) best = &a;
    if (best) return {Action::Kind::kExecute, best->plan};
    return {Action::Kind::kExplore, nullptr};
  }
  if (!candidates_.empty()) return {Action::Kind::kDefer, nullptr};
  for (const Available& a : availables_)
    for (std::uint8_t alive : a.alive)
      if (alive) return {Action::Kind::kDefer, nullptr};
  return {Action::Kind::kExplore, nullptr};
}

}  // namespace streamfuse::fusion
