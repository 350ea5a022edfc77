// PlanTrie: a device's plans as a prefix tree over their relative ops, so that matching a segment
// costs one lookup per op, whatever the number of plans (the policy used to copy every plan that
// starts with the segment's first op and compare each at every later op: 18.5 us per op with
// 2,000 such plans against 0.8 us with one, bench/README.md "Plans that share a first op").
//
// Nodes are immutable once published. A change copies the path from the root to the node it
// changes and shares every other node, so a stream holding the root goes on matching the plans as
// they were when its segment started while another stream changes the store (as the copied
// candidate lists did).
//
// What a step reads is kept small, because with many plans it is read from memory (with 2,000
// plans the tree's share of an op went from 7 to 57 ns while each edge held a copy of its op and
// each op had a node of its own):
// - each distinct op is kept once, as a Symbol that every edge with that op shares, and a step
//   compares the recorded op with symbols, which are few and stay in cache;
// - an edge stands for a run of ops, so a stretch of ops that no plan branches or ends in (most
//   of a segment) is one array of symbols, not a node per op. Only the root, a node with a plan
//   and a node where plans branch are nodes.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include <boost/container/small_vector.hpp>
#include <boost/unordered/unordered_flat_map.hpp>

#include "core/ir.h"
#include "fusion/plan.h"

namespace streamfuse::fusion {

class PlanTrie {
 public:
  struct Node;
  using NodeRef = std::shared_ptr<const Node>;

  // One distinct relative op, shared by every edge that has it.
  struct Symbol {
    core::OpDesc op;
    std::uint64_t hash;  // core::hash_op(op)
  };
  using SymbolRef = std::shared_ptr<const Symbol>;

  // Ops that follow one another, then a node. Never empty; the first op tells a node's edges
  // apart.
  struct Edge {
    boost::container::small_vector<SymbolRef, 1> run;
    NodeRef node;
  };

  // Nodes with more edges than this find them through an index by their first op's hash; the
  // others compare the op with each edge's (most nodes have two or three: hashing would cost
  // more).
  static constexpr std::size_t kScannedEdges = 8;
  using HashIndex =
      boost::unordered_flat_map<std::uint64_t, boost::container::small_vector<std::uint32_t, 1>>;

  // The plans whose ops start with the ops on the path to here. Every node but the root holds a
  // plan or has two edges or more.
  struct Node {
    std::shared_ptr<const ExecutionPlan> plan;      // the one whose ops end here, if any
    boost::container::small_vector<Edge, 2> edges;  // each leads to a subtree holding a plan
    std::shared_ptr<const HashIndex> by_hash;       // past kScannedEdges: edge indices by hash

    // The index in `edges` of the edge whose run starts with `op` (whose core::hash_op is
    // `hash`, computed only when needed), or -1.
    std::ptrdiff_t find(const core::OpDesc& op, const std::uint64_t* hash = nullptr) const;
    // Appends every plan at or under this node.
    template <class Plans>
    void collect(Plans& out) const {
      if (plan) out.push_back(plan);
      for (const Edge& e : edges) e.node->collect(out);
    }
  };

  // A place in the tree after some ops: at a node, or inside an edge's run. Valid while the
  // tree's nodes it walks are held (a copy of root() held for the walk).
  class Cursor {
   public:
    Cursor() = default;  // nowhere: no plan starts with the ops
    explicit Cursor(const Node* node) : node_(node) {}

    // Moves past `op` (whose core::hash_op is `hash`, computed only when needed); nowhere when
    // no plan continues with it.
    void next(const core::OpDesc& op, const std::uint64_t* hash = nullptr);
    // The plan whose ops are exactly the ops so far, or null.
    const std::shared_ptr<const ExecutionPlan>* plan() const {
      return node_ && !edge_ && node_->plan ? &node_->plan : nullptr;
    }
    // Whether a plan longer than the ops so far starts with them.
    bool continues() const { return edge_ || (node_ && !node_->edges.empty()); }
    // Appends every plan that starts with the ops so far.
    template <class Plans>
    void collect(Plans& out) const {
      if (edge_)
        edge_->node->collect(out);
      else if (node_)
        node_->collect(out);
    }
    explicit operator bool() const { return node_ != nullptr; }

   private:
    const Node* node_ = nullptr;
    const Edge* edge_ = nullptr;  // inside this edge of node_, `offset_` ops of its run past
    std::uint32_t offset_ = 0;
  };

  PlanTrie();

  // The empty prefix: every plan is under it. Never null.
  const NodeRef& root() const { return root_; }
  // Stores `plan` at its ops, in place of a plan with the same ops.
  void put(std::shared_ptr<const ExecutionPlan> plan);
  // Removes the plan stored at `ops`, if any, and the nodes left with no plan under them.
  void remove(std::span<const core::OpDesc> ops);
  // Distinct ops kept for the edges (for tests: symbols no edge uses are let go of).
  std::size_t num_symbols() const { return num_symbols_; }

 private:
  // The shared symbol of `op`, made if there is none.
  SymbolRef intern(const core::OpDesc& op);
  // Lets go of the symbols no edge uses any more.
  void sweep();
  // A copy of `node` (or a new node) with `plan` stored at `ops` below it.
  NodeRef with_plan(const Node* node, std::span<const core::OpDesc> ops,
                    std::shared_ptr<const ExecutionPlan> plan);

  NodeRef root_;
  boost::unordered_flat_map<std::uint64_t, boost::container::small_vector<SymbolRef, 1>> symbols_;
  std::size_t num_symbols_ = 0;
  // Swept when num_symbols_ reaches sweep_at_ (twice what the last sweep left, at least 64), or
  // after as many removals as half the symbols (at least 64): amortized O(1) a change.
  std::size_t sweep_at_ = 64;
  std::size_t removals_ = 0;  // since the last sweep
};

}  // namespace streamfuse::fusion
