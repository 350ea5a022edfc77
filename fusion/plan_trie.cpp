#include "fusion/plan_trie.h"

#include <algorithm>

namespace streamfuse::fusion {
namespace {

using Node = PlanTrie::Node;
using NodeRef = PlanTrie::NodeRef;
using Edge = PlanTrie::Edge;

void reindex(Node& node) {
  if (node.edges.size() <= PlanTrie::kScannedEdges) {
    node.by_hash.reset();
    return;
  }
  auto index = std::make_shared<PlanTrie::HashIndex>();
  for (std::size_t i = 0; i < node.edges.size(); ++i)
    (*index)[node.edges[i].run.front()->hash].push_back(static_cast<std::uint32_t>(i));
  node.by_hash = std::move(index);
}

// Whether `ops` start with the whole of `run`.
bool starts_with_run(std::span<const core::OpDesc> ops, const Edge& edge) {
  if (ops.size() < edge.run.size()) return false;
  for (std::size_t k = 0; k < edge.run.size(); ++k)
    if (!(edge.run[k]->op == ops[k])) return false;
  return true;
}

// `edge` (of a copied node) leading to `child`, which replaces its node: a child with no plan
// and one edge is not kept as a node, its edge's run joins this one's.
void lead_to(Edge& edge, NodeRef child) {
  if (!child->plan && child->edges.size() == 1) {
    const Edge& only = child->edges.front();
    edge.run.insert(edge.run.end(), only.run.begin(), only.run.end());
    edge.node = only.node;
    return;
  }
  edge.node = std::move(child);
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
  const Edge& edge = node->edges[at];
  if (!starts_with_run(ops, edge)) return node;  // ends inside the run, or leaves it: no plan
  NodeRef child = without_plan(edge.node, ops.subspan(edge.run.size()));
  if (child == edge.node) return node;
  auto copy = std::make_shared<Node>(*node);
  if (child) {
    lead_to(copy->edges[at], std::move(child));
    return copy;
  }
  copy->edges.erase(copy->edges.begin() + i);
  reindex(*copy);
  if (!copy->plan && copy->edges.empty()) return nullptr;
  return copy;  // with one edge and no plan, the caller joins it to its own edge
}

}  // namespace

std::ptrdiff_t Node::find(const core::OpDesc& op, const std::uint64_t* hash) const {
  if (!by_hash) {
    for (std::size_t i = 0; i < edges.size(); ++i)
      if (edges[i].run.front()->op == op) return static_cast<std::ptrdiff_t>(i);
    return -1;
  }
  const auto bucket = by_hash->find(hash ? *hash : core::hash_op(op));
  if (bucket == by_hash->end()) return -1;
  for (std::uint32_t i : bucket->second)
    if (edges[i].run.front()->op == op) return i;
  return -1;
}

void PlanTrie::Cursor::next(const core::OpDesc& op, const std::uint64_t* hash) {
  if (!node_) return;
  if (edge_) {
    if (edge_->run[offset_]->op == op) {
      if (++offset_ == edge_->run.size()) node_ = edge_->node.get(), edge_ = nullptr;
      return;
    }
  } else if (const std::ptrdiff_t i = node_->find(op, hash); i >= 0) {
    const Edge& e = node_->edges[static_cast<std::size_t>(i)];
    if (e.run.size() == 1)
      node_ = e.node.get();
    else
      edge_ = &e, offset_ = 1;
    return;
  }
  *this = Cursor();
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
  SymbolRef first = intern(ops.front());
  const std::ptrdiff_t i = copy->find(first->op, &first->hash);
  if (i < 0) {  // a new edge: the rest of the ops as its run, then a node with the plan
    Edge e;
    e.run.push_back(std::move(first));
    for (const core::OpDesc& op : ops.subspan(1)) e.run.push_back(intern(op));
    e.node = with_plan(nullptr, {}, std::move(plan));
    copy->edges.push_back(std::move(e));
    reindex(*copy);
    return copy;
  }
  Edge& e = copy->edges[static_cast<std::size_t>(i)];
  std::size_t common = 1;
  while (common < e.run.size() && common < ops.size() && e.run[common]->op == ops[common]) ++common;
  if (common < e.run.size()) {
    // The ops end inside the run or leave it: a node splits it where they part.
    auto middle = std::make_shared<Node>();
    middle->edges.push_back(
        {{e.run.begin() + static_cast<std::ptrdiff_t>(common), e.run.end()}, std::move(e.node)});
    e.run.erase(e.run.begin() + static_cast<std::ptrdiff_t>(common), e.run.end());
    e.node = with_plan(middle.get(), ops.subspan(common), std::move(plan));
    return copy;
  }
  e.node = with_plan(e.node.get(), ops.subspan(common), std::move(plan));
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
