// The plans' prefix tree: lookups one op at a time, a plan replaced in place, removal pruning the
// nodes left with no plan, wide nodes found through their index, and nodes a reader holds kept
// as they were while the tree changes.
#include "fusion/plan_trie.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "streamfuse/streamfuse.h"
#include "tests/fusion/plan_store_fixture.h"

namespace plan_store_testing {
namespace {

using Trie = fu::PlanTrie;

std::shared_ptr<const fu::ExecutionPlan> plan_of(std::vector<core::OpDesc> ops) {
  fu::PlanDraft d;
  d.ops = std::move(ops);
  return fu::make_plan(std::move(d));
}

// The node at the end of `ops`, or null.
const Trie::Node* walk(const Trie& t, const std::vector<core::OpDesc>& ops) {
  const Trie::Node* node = t.root().get();
  for (const core::OpDesc& op : ops) {
    node = node->next(op);
    if (!node) return nullptr;
  }
  return node;
}

TEST(PlanTrie, EachPlanIsFoundAtItsOpsAndOnlyThere) {
  Trie t;
  const auto a = plan_of({kA}), ab = plan_of({kA, kB}), acd = plan_of({kA, kC, kD});
  t.put(a);
  t.put(ab);
  t.put(acd);
  EXPECT_EQ(walk(t, {kA})->plan, a);
  EXPECT_EQ(walk(t, {kA})->edges.size(), 2u);
  EXPECT_EQ(walk(t, {kA, kB})->plan, ab);
  EXPECT_EQ(walk(t, {kA, kC})->plan, nullptr);  // a prefix of a plan, not a plan
  EXPECT_EQ(walk(t, {kA, kC, kD})->plan, acd);
  EXPECT_EQ(walk(t, {kB}), nullptr);
  EXPECT_EQ(walk(t, {kA, kD}), nullptr);
  EXPECT_EQ(walk(t, {kA, kB, kC}), nullptr);
}

TEST(PlanTrie, APlanWithTheSameOpsReplacesTheStoredOneAndReadersKeepWhatTheyHeld) {
  Trie t;
  const auto first = plan_of({kA, kB});
  t.put(first);
  // What a stream in the middle of a segment holds: the node after its first op.
  const Trie::NodeRef held = t.root()->edges[static_cast<std::size_t>(t.root()->find(kA))].node;
  const auto second = plan_of({kA, kB});
  t.put(second);
  EXPECT_EQ(walk(t, {kA, kB})->plan, second);
  EXPECT_EQ(held->next(kB)->plan, first);  // the held node did not change
  t.remove(std::vector<core::OpDesc>{kA, kB});
  EXPECT_EQ(walk(t, {kA}), nullptr);
  EXPECT_EQ(held->next(kB)->plan, first);
}

TEST(PlanTrie, RemovingPrunesNodesWithNoPlanUnderThem) {
  Trie t;
  t.put(plan_of({kA}));
  t.put(plan_of({kA, kB, kC}));
  t.put(plan_of({kA, kD}));
  t.remove(std::vector<core::OpDesc>{kA, kB, kC});
  ASSERT_NE(walk(t, {kA}), nullptr);
  EXPECT_EQ(walk(t, {kA, kB}), nullptr);  // pruned: nothing under it any more
  EXPECT_EQ(walk(t, {kA})->edges.size(), 1u);
  t.remove(std::vector<core::OpDesc>{kA});  // a node with no plan stays while plans are under it
  ASSERT_NE(walk(t, {kA}), nullptr);
  EXPECT_EQ(walk(t, {kA})->plan, nullptr);
  t.remove(std::vector<core::OpDesc>{kA, kE});  // not stored: nothing changes
  t.remove(std::vector<core::OpDesc>{kA, kD});
  EXPECT_TRUE(t.root()->edges.empty());
}

// Each distinct op is kept once, whatever the number of edges that stand for it, and is let go
// of once no edge uses it.
TEST(PlanTrie, EdgesShareOneSymbolPerOpAndUnusedOnesAreLetGo) {
  Trie t;
  t.put(plan_of({kA, kB, kC}));
  t.put(plan_of({kB, kB, kC}));
  t.put(plan_of({kC, kA}));
  EXPECT_EQ(t.num_symbols(), 3u);  // kA, kB, kC: nine ops, seven edges
  const Trie::Node* b1 = walk(t, {kA});
  const Trie::Node* b2 = walk(t, {kB});
  ASSERT_NE(b1, nullptr);
  ASSERT_NE(b2, nullptr);
  EXPECT_EQ(b1->edges[0].symbol, b2->edges[0].symbol);
  // Many plans with ops of their own, then removed: their symbols go, a sweep at a time.
  std::vector<std::vector<core::OpDesc>> removed;
  for (int i = 0; i < 200; ++i) {
    core::OpDesc o = op(core::OpKind::kMul);
    o.scalars.push_back(streamfuse::Scalar(static_cast<double>(i)));
    removed.push_back({kD, o});
    t.put(plan_of(removed.back()));
  }
  EXPECT_GE(t.num_symbols(), 3u + 1u + 64u);  // grows until a sweep finds nothing to drop
  for (const auto& ops : removed) t.remove(ops);
  EXPECT_LE(t.num_symbols(), 4u + 64u);
  EXPECT_EQ(walk(t, {kA, kB, kC})->plan->ops.size(), 3u);
  EXPECT_EQ(walk(t, {kD}), nullptr);
}

// Past kScannedEdges a node finds its edges through an index by hash, kept as edges come and go.
TEST(PlanTrie, AWideNodeFindsEveryEdge) {
  Trie t;
  std::vector<core::OpDesc> seconds;
  for (int i = 0; i < 40; ++i) {
    core::OpDesc o = op(core::OpKind::kAdd);
    o.scalars.push_back(streamfuse::Scalar(static_cast<double>(i)));
    seconds.push_back(o);
    t.put(plan_of({kA, o}));
  }
  ASSERT_GT(walk(t, {kA})->edges.size(), Trie::kScannedEdges);
  for (int i = 0; i < 40; i += 3) t.remove(std::vector<core::OpDesc>{kA, seconds[i]});
  for (int i = 0; i < 40; ++i) {
    const Trie::Node* n = walk(t, {kA, seconds[i]});
    if (i % 3 == 0) {
      EXPECT_EQ(n, nullptr) << i;
    } else {
      ASSERT_NE(n, nullptr) << i;
      EXPECT_EQ(n->plan->ops[1], seconds[i]);
    }
  }
}

// Through the API: 300 chains that share their first op and differ at one later op or more each
// find their own plan (issue 18's benchmark shape), and compute what the ops do.
TEST(PlanTrie, ManyPlansSharingAFirstOpEachMatchTheirOwn) {
  namespace sf = streamfuse;
  const sf::Config saved = sf::config();
  sf::Config c = saved;
  c.fusion = true;
  c.jit = sf::JitMode::kInterpret;
  sf::set_config(c);
  const sf::Tensor a = sf::full({1}, 1.0f), b = sf::full({1}, 0.5f);
  sf::synchronize();  // made before: every chain's segment starts with its add
  const auto chain = [&](int k) {
    sf::Tensor x = a + b;
    for (int step = 0; step < 10; ++step) x = (k >> step & 1) ? x * 0.5f : x + 0.25f;
    return x.item<float>();
  };
  const auto expected = [](int k) {
    float x = 1.5f;
    for (int step = 0; step < 10; ++step) x = (k >> step & 1) ? x * 0.5f : x + 0.25f;
    return x;
  };
  constexpr int kChains = 300;
  // Each segment starts with the drop of the previous chain's result: the first pass in one
  // order, then twice in the other, so that the third meets only segments seen before.
  for (int k = 0; k < kChains; ++k) ASSERT_EQ(chain(k), expected(k)) << k;
  const sf::FusionStats first = sf::fusion_stats();
  for (int pass = 0; pass < 2; ++pass) {
    const sf::FusionStats before = sf::fusion_stats();
    for (int k = kChains - 1; k >= 0; --k) ASSERT_EQ(chain(k), expected(k)) << k;
    const sf::FusionStats after = sf::fusion_stats();
    if (pass == 1) {
      EXPECT_EQ(after.plans_explored, before.plans_explored) << "every chain found its plan";
    }
    EXPECT_GE(after.interpreted_launches - before.interpreted_launches, kChains);
  }
  EXPECT_GE(first.plans_explored + first.plans_loaded,
            kChains);  // made here, or read from the cache
  sf::set_config(saved);
}

}  // namespace
}  // namespace plan_store_testing
