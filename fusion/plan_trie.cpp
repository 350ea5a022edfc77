#include "fusion/plan_trie.h"

#include <algorithm>

namespace streamfuse::fusion {
namespace {

using Node = PlanTrie::Node;
using NodeRef = PlanTrie::NodeRef;

void reindex(Node& node) {
  if (node.edges.size() <= PlanTrie::kScannedEdges) {
    node.by_hash.reset();
    return;
  }
  auto index = std::make_shared<PlanTrie::HashIndex>();
  for (std::size_t i = 0; i < node.edges.size(); ++i)
    (*index)[node.edges[i].symbol->hash].push_back(static_cast<std::uint32_t>(i));
  node.by_hash = std::move(index);
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
  if (!by_hash) {
    for (std::size_t i = 0; i < edges.size(); ++i)
      if (edges[i].symbol->op == op) return static_cast<std::ptrdiff_t>(i);
    return -1;
  }
  const auto bucket = by_hash->find(hash ? *hash : core::hash_op(op));
  if (bucket == by_hash->end()) return -1;
  for (std::uint32_t i : bucket->second)
    if (edges[i].symbol->op == op) return i;
  return -1;
}

PlanTrie::PlanTrie() : root_(std::make_shared<Node>()) {}

PlanTrie::SymbolRef PlanTrie::intern(const core::OpDesc& op) {
  const std::uint64_t hash = core::hash_op(op);
  auto& bucket = symbols_[hash];
  for (const SymbolRef& s : bucket)
    if (s->op == op) return s;
  bucket.push_back(std::make_shared<const Symbol>(Symbol{op, hash}));
  ++num_symbols_;
  return bucket.back();
}

void PlanTrie::sweep() {
  // Only this table and the edges hold symbols, and edges are copied only here (under the
  // store's lock): a count of one cannot grow behind our back.
  for (auto& [hash, bucket] : symbols_) {
    const auto dead = std::remove_if(bucket.begin(), bucket.end(),
                                     [](const SymbolRef& s) { return s.use_count() == 1; });
    num_symbols_ -= static_cast<std::size_t>(bucket.end() - dead);
    bucket.erase(dead, bucket.end());
  }
  boost::unordered::erase_if(symbols_, [](const auto& entry) { return entry.second.empty(); });
  sweep_at_ = std::max<std::size_t>(64, 2 * num_symbols_);
  removals_ = 0;
}

NodeRef PlanTrie::with_plan(const Node* node, std::span<const core::OpDesc> ops,
                            std::shared_ptr<const ExecutionPlan> plan) {
  auto copy = node ? std::make_shared<Node>(*node) : std::make_shared<Node>();
  if (ops.empty()) {
    copy->plan = std::move(plan);
    return copy;
  }
  SymbolRef symbol = intern(ops.front());
  if (const std::ptrdiff_t i = copy->find(symbol->op, &symbol->hash); i >= 0) {
    Edge& e = copy->edges[static_cast<std::size_t>(i)];
    e.node = with_plan(e.node.get(), ops.subspan(1), std::move(plan));
    return copy;
  }
  NodeRef child = with_plan(nullptr, ops.subspan(1), std::move(plan));
  copy->edges.push_back({std::move(symbol), std::move(child)});
  reindex(*copy);
  return copy;
}

void PlanTrie::put(std::shared_ptr<const ExecutionPlan> plan) {
  const std::vector<core::OpDesc>& ops = plan->ops;
  root_ = with_plan(root_.get(), ops, std::move(plan));
  if (num_symbols_ >= sweep_at_) sweep();
}

void PlanTrie::remove(std::span<const core::OpDesc> ops) {
  NodeRef left = without_plan(root_, ops);
  root_ = left ? std::move(left) : std::make_shared<Node>();
  if (++removals_ >= std::max<std::size_t>(64, num_symbols_ / 2)) sweep();
}

}  // namespace streamfuse::fusion
