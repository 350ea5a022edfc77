#include "fusion/plan.h"

#include <algorithm>

#include <boost/container/small_vector.hpp>

#include "core/log.h"

namespace streamfuse::fusion {
namespace {

// Records size id -> real size; false on a contradiction.
bool bind(boost::container::small_vector<std::int64_t, 32>& sizes, std::size_t id,
          std::int64_t size) {
  if ((id == 0) != (size == 1)) return false;
  if (id >= sizes.size()) sizes.resize(id + 1, -1);
  if (sizes[id] >= 0 && sizes[id] != size) return false;
  sizes[id] = size;
  return true;
}

}  // namespace

std::size_t merge_triggers(std::vector<Trigger>& into, std::vector<Trigger> more) {
  std::size_t added = 0;
  for (Trigger& t : more) {
    if (std::find(into.begin(), into.end(), t) != into.end()) continue;
    into.push_back(std::move(t));
    ++added;
  }
  if (into.size() > kMaxTriggers)
    into.erase(into.begin(), into.end() - static_cast<std::ptrdiff_t>(kMaxTriggers));
  return added;
}

std::size_t merge_successors(std::vector<core::OpDesc>& into,
                             const std::vector<core::OpDesc>& more) {
  std::size_t added = 0;
  for (const core::OpDesc& op : more) {
    if (std::find(into.begin(), into.end(), op) != into.end()) continue;
    into.push_back(op);
    ++added;
  }
  if (into.size() > kMaxSuccessors)
    into.erase(into.begin(), into.end() - static_cast<std::ptrdiff_t>(kMaxSuccessors));
  return added;
}

std::shared_ptr<ExecutionPlan> make_plan(PlanDraft draft) {
  auto plan = std::make_shared<ExecutionPlan>();
  plan->ops = std::move(draft.ops);
  const auto list = [&](const core::TensorDesc& t) {
    for (std::int64_t id : t.shape) plan->size_ids.push_back(static_cast<std::uint32_t>(id));
  };
  for (const core::OpDesc& op : plan->ops) {
    for (const core::TensorDesc& t : op.inputs) list(t);
    for (const core::TensorDesc& t : op.outputs) list(t);
  }
  plan->optimization = std::move(draft.optimization);
  merge_triggers(plan->triggers, std::move(draft.triggers));
  merge_successors(plan->successors, draft.successors);
  for (const core::OpDesc& op : plan->successors)
    plan->successor_hashes.push_back(core::hash_op(op));
  return plan;
}

std::optional<std::string> run_plan(const ExecutionPlan& plan, ExecutionContext& context) {
  std::optional<std::string> failure;
  if (plan.optimization) {
    try {
      plan.optimization->execute(context);
      return failure;
    } catch (const std::exception& e) {
      failure = e.what();
      core::warn_once("fusion-fallback:" + *failure,
                      "a fused segment failed and ran unfused instead: " + *failure);
    }
  }
  for (std::size_t i = 0; i < plan.len(); ++i) context.run_operation(i);
  return failure;
}

bool bindings_match(const ExecutionPlan& plan, const SegmentQueue& queue) {
  if (queue.size() < plan.len()) return false;
  boost::container::small_vector<std::int64_t, 32> sizes;  // by size id
  // The queue's relative ops are the plan's (the caller matched them), so its tensors have the
  // plan's ranks, in the order size_ids lists them.
  std::size_t next = 0;
  const auto bound = [&](const core::TensorDesc& t) {
    for (std::int64_t size : t.shape)
      if (next == plan.size_ids.size() || !bind(sizes, plan.size_ids[next++], size)) return false;
    return true;
  };
  for (std::size_t i = 0; i < plan.len(); ++i) {
    const core::OpDesc& real = queue.global(i);
    for (const core::TensorDesc& t : real.inputs)
      if (!bound(t)) return false;
    for (const core::TensorDesc& t : real.outputs)
      if (!bound(t)) return false;
  }
  if (next != plan.size_ids.size()) return false;
  // Different ids must be different sizes.
  boost::container::small_vector<std::int64_t, 32> seen;
  for (std::size_t id = 1; id < sizes.size(); ++id)
    if (sizes[id] >= 0) seen.push_back(sizes[id]);
  std::sort(seen.begin(), seen.end());
  return std::adjacent_find(seen.begin(), seen.end()) == seen.end();
}

}  // namespace streamfuse::fusion
