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
  // Each tensor of the plan's ops (whose shapes hold size ids) against the queue's.
  const auto bound = [&](const auto& ids, const auto& real) {
    if (ids.size() != real.size()) return false;
    for (std::size_t t = 0; t < ids.size(); ++t) {
      const Shape &id = ids[t].shape, &size = real[t].shape;
      if (id.rank() != size.rank()) return false;
      for (int d = 0; d < id.rank(); ++d)
        if (!bind(sizes, static_cast<std::size_t>(id[d]), size[d])) return false;
    }
    return true;
  };
  for (std::size_t i = 0; i < plan.len(); ++i) {
    const core::OpDesc &relative = plan.ops[i], &real = queue.global(i);
    if (!bound(relative.inputs, real.inputs) || !bound(relative.outputs, real.outputs))
      return false;
  }
  // Different ids must be different sizes.
  boost::container::small_vector<std::int64_t, 32> seen;
  for (std::size_t id = 1; id < sizes.size(); ++id)
    if (sizes[id] >= 0) seen.push_back(sizes[id]);
  std::sort(seen.begin(), seen.end());
  return std::adjacent_find(seen.begin(), seen.end()) == seen.end();
}

}  // namespace streamfuse::fusion
