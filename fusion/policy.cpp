#include "fusion/policy.h"

#include <algorithm>

namespace streamfuse::fusion {

void Policy::reset() {
  root_.reset();
  at_ = PlanTrie::Cursor();
  availables_.clear();
  found_.reset();
  num_ops_ = 0;
}

void Policy::update(const PlanStore& store, const core::OpDesc& op) {
  check_triggers(op);
  if (num_ops_ == 0) {
    first_hash_ = core::hash_op(op);
    root_ = store.root_for(op, first_hash_);
    at_ = PlanTrie::Cursor(root_.get());
    at_.next(op, &first_hash_);
  } else {
    at_.next(op);
  }
  ++num_ops_;
  if (const PlanRef* plan = at_.plan()) promote(*plan);
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

void Policy::promote(const PlanRef& p) {
  Available a{p, {}};
  for (const Trigger& t : p->triggers) {
    a.alive.push_back(t.kind == Trigger::Kind::kAlways ? 0 : 1);
    if (t.kind == Trigger::Kind::kAlways && (!found_ || found_->len() < p->len())) found_ = p;
  }
  availables_.push_back(std::move(a));
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
  // A longer plan may still match: wait for the ops that decide.
  if (at_.continues()) return {Action::Kind::kDefer, nullptr};
  for (const Available& a : availables_)
    for (std::uint8_t alive : a.alive)
      if (alive) return {Action::Kind::kDefer, nullptr};
  return {Action::Kind::kExplore, nullptr};
}

}  // namespace streamfuse::fusion
