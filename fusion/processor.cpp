#include "fusion/processor.h"

#include <cassert>
#include <string>
#include <string_view>
#include <vector>

#include "core/log.h"

namespace streamfuse::fusion {
namespace {

using core::LogChannel;

bool logging() { return core::log_enabled(core::LogChannel::kFusion); }

void log(const std::string& line) { core::log_line(core::LogChannel::kFusion, line); }

// "mul, erf x2, add; 2 drops": the kinds of every op of a plan in order (a run of one kind
// counted), its drops counted apart (they free memory and compute nothing).
std::string op_kinds(const std::vector<core::OpDesc>& ops) {
  std::string s;
  std::size_t drops = 0;
  for (std::size_t i = 0; i < ops.size();) {
    if (ops[i].kind == core::OpKind::kDrop) {
      ++drops;
      ++i;
      continue;
    }
    std::size_t run = 1;
    while (i + run < ops.size() && ops[i + run].kind == ops[i].kind) ++run;
    if (!s.empty()) s += ", ";
    s += core::op_name(ops[i].kind);
    if (run > 1) s += " x" + std::to_string(run);
    i += run;
  }
  if (drops == 1 && s.empty()) return "drop";
  if (drops)
    s += (s.empty() ? "" : "; ") + std::to_string(drops) + (drops == 1 ? " drop" : " drops");
  return s;
}

// What the plan covers and how it runs, then the segment's first op as recorded, with its real
// sizes and scalars: "3 ops (add, mul, add) -> elementwise: ...; first add(t1:[4, 8]:f32:ro, ...".
std::string describe(const ExecutionPlan& plan, const SegmentQueue& queue) {
  std::string s = std::to_string(plan.len()) + (plan.len() == 1 ? " op (" : " ops (");
  s += op_kinds(plan.ops) + ") -> ";
  s += plan.optimization ? plan.optimization->describe() : std::string("operations");
  s += "; first " + core::to_string(queue.global(0));
  return s;
}

}  // namespace

Processor::Processor(PlanStore& store, std::vector<std::unique_ptr<OptimizationBuilder>> builders,
                     std::size_t max_segment_ops)
    : store_(store), explorer_(std::move(builders), max_segment_ops) {}

void Processor::start_segment() {
  policy_.reset();
  explorer_.reset();
  fed_ = 0;
  exploring_ = false;
}

void Processor::process(SegmentQueue& queue, ExecutionContext& context, ExecutionMode mode) {
  while (queue.size() > 0) {
    if (!exploring_) {
      // An op no builder may start a segment with (a view, a drop) runs as it is, unmatched: the
      // plan exploring it would make is that op alone, and finding that plan cost more than the
      // op itself (a reshape: 2.3x its time with fusion off).
      if (fed_ == 0 && explorer_.runs_alone(queue.global(0).kind)) {
        run_alone(queue, context, "ran on its own: ");
        continue;
      }
      Action action{Action::Kind::kDefer, nullptr};
      while (fed_ < queue.size()) {
        policy_.update(store_, queue.relative(fed_++));
        if (previous_) {  // the segment after it starts with the queue's first op
          store_.note_successor(previous_, queue.relative(0), policy_.first_hash());
          previous_.reset();
        }
        action = policy_.action(ExecutionMode::kLazy);
        if (action.kind != Action::Kind::kDefer) break;
      }
      if (action.kind == Action::Kind::kDefer && mode == ExecutionMode::kSync)
        action = policy_.action(ExecutionMode::kSync);
      if (action.kind == Action::Kind::kDefer) return;
      if (action.kind == Action::Kind::kExecute) {
        // The plan's relative ops equal the segment's, and the relative form numbers sizes
        // densely by value from the segment's first op (core/relative.h): every size id of the
        // plan stands for one real size here, different ids for different sizes, 1 for id 0.
        // Checked again where asserts are on (the sanitizer builds).
        assert(bindings_match(*action.plan, queue));
        if (logging()) log("matched plan: " + describe(*action.plan, queue));
        execute(action.plan, queue, context, /*explored=*/false);
        continue;
      }
      if (!store_.try_explore()) {  // past the exploration cap: run the head op as it is
        core::warn_once("fusion-exploration-cap",
                        "the plan store's exploration cap was reached; unknown segments now run "
                        "op by op");
        run_alone(queue, context, "executed past the exploration cap: ");
        start_segment();
        continue;
      }
      exploring_ = true;
    }
    std::optional<PlanDraft> draft = explorer_.explore(queue, mode);
    if (!draft) return;  // lazy: builders still open, wait for more ops
    PlanRef plan = store_.add(std::move(*draft));
    if (logging()) log("explored plan: " + describe(*plan, queue));
    execute(plan, queue, context, /*explored=*/true);
  }
}

void Processor::run_alone(SegmentQueue& queue, ExecutionContext& context, const char* why) {
  context.run_operation(0);
  if (observer_) observer_->executed(nullptr, queue, 1, /*explored=*/false);
  if (logging()) log(why + core::to_string(queue.global(0)));
  queue.drain_front(1);
}

void Processor::execute(const PlanRef& plan_ref, SegmentQueue& queue, ExecutionContext& context,
                        bool explored) {
  const ExecutionPlan& plan = *plan_ref;
  store_.touch(plan);
  if (!entered_) {  // where the next process starts reading plans ahead
    store_.note_entry(queue.relative(0));
    entered_ = true;
  }
  const std::optional<std::string> failure = run_plan(plan, context);
  if (logging()) {
    if (failure) log("fell back to the ops: " + *failure + "; " + describe(plan, queue));
    log(std::string(failure ? "executed op by op: " : "executed: ") + describe(plan, queue));
  }
  if (observer_) observer_->executed(plan_ref, queue, plan.len(), explored);
  queue.drain_front(plan.len());
  start_segment();
  previous_ = plan_ref;
}

}  // namespace streamfuse::fusion
