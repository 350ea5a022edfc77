#include "fusion/plan_trie.h"

namespace streamfuse::fusion {
namespace {

using Node = PlanTrie::Node;
using NodeRef = PlanTrie::NodeRef;

void reindex(Node& node) {
  node.by_hash.clear();
  if (node.edges.size() <= PlanTrie::kScannedEdges) return;
  for (std::size_t i = 0; i < node.edges.size(); ++i)
    node.by_hash[node.edges[i].hash].push_back(static_cast<std::uint32_t>(i));
}

// A copy of `node` (or a new node) with `plan` stored at `ops` below it.
NodeRef with_plan(const Node* node, std::span<const core::OpDesc> ops,
                  std::shared_ptr<const ExecutionPlan> plan) {
  auto copy = node ? std::make_shared<Node>(*node) : std::make_shared<Node>();
  if (ops.empty()) {
    copy->plan = std::move(plan);
    return copy;
  }
  const std::uint64_t hash = core::hash_op(ops.front());
  if (const std::ptrdiff_t i = copy->find(ops.front(), &hash); i >= 0) {
    PlanTrie::Edge& e = copy->edges[static_cast<std::size_t>(i)];
    e.node = with_plan(e.node.get(), ops.subspan(1), std::move(plan));
    return copy;
  }
  copy->edges.push_back({ops.front(), hash, with_plan(nullptr, ops.subspan(1), std::move(plan))});
  reindex(*copy);
  return copy;
}

// `node` with no plan at `ops` below it: itself when there is none, null when nothing is left
// under it, else a copy of the path.
NodeRef without_plan(const NodeRef& node, std::span<const core::OpDesc> ops) {
  if (ops.empty()) {
    if (!node->plan) return node;
    if (node->edges.empty()) return nullptr;
    auto copy = std::make_shared<Node>(*node);
    copy->plan.reset();
    return copy;
  }
  const std::ptrdiff_t i = node->find(ops.front());
  if (i < 0) return node;
  const auto at = static_cast<std::size_t>(i);
  NodeRef child = without_plan(node->edges[at].node, ops.subspan(1));
  if (child == node->edges[at].node) return node;
  auto copy = std::make_shared<Node>(*node);
  if (child) {
    copy->edges[at].node = std::move(child);
    return copy;
  }
  copy->edges.erase(copy->edges.begin() + i);
  reindex(*copy);
  if (!copy->plan && copy->edges.empty()) return nullptr;
  return copy;
}

}  // namespace

std::ptrdiff_t Node::find(const core::OpDesc& op, const std::uint64_t* hash) const {
  if (edges.size() <= PlanTrie::kScannedEdges) {
    for (std::size_t i = 0; i < edges.size(); ++i)
      if (edges[i].op == op) return static_cast<std::ptrdiff_t>(i);
    return -1;
  }
  const auto bucket = by_hash.find(hash ? *hash : core::hash_op(op));
  if (bucket == by_hash.end()) return -1;
  for (std::uint32_t i : bucket->second)
    if (edges[i].op == op) return i;
  return -1;
}

PlanTrie::PlanTrie() : root_(std::make_shared<Node>()) {}

void PlanTrie::put(std::shared_ptr<const ExecutionPlan> plan) {
  const std::vector<core::OpDesc>& ops = plan->ops;
  root_ = with_plan(root_.get(), ops, std::move(plan));
}

void PlanTrie::remove(std::span<const core::OpDesc> ops) {
  NodeRef left = without_plan(root_, ops);
  root_ = left ? std::move(left) : std::make_shared<Node>();
}

}  // namespace streamfuse::fusion
