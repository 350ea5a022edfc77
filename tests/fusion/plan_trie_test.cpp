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

// The place after `ops` from `root`, as a segment's matching reaches it.
Trie::Cursor walk(const Trie::NodeRef& root, const std::vector<core::OpDesc>& ops) {
  Trie::Cursor at(root.get());
  for (const core::OpDesc& op : ops) at.next(op);
  return at;
}
Trie::Cursor walk(const Trie& t, const std::vector<core::OpDesc>& ops) {
  return walk(t.root(), ops);
}
// The plan ending after `ops`, or null.
std::shared_ptr<const fu::ExecutionPlan> plan_at(const Trie::Cursor& at) {
  return at.plan() ? *at.plan() : nullptr;
}

TEST(PlanTrie, EachPlanIsFoundAtItsOpsAndOnlyThere) {
  Trie t;
  const auto a = plan_of({kA}), ab = plan_of({kA, kB}), acd = plan_of({kA, kC, kD});
  t.put(a);
  t.put(ab);
  t.put(acd);
  EXPECT_EQ(plan_at(walk(t, {kA})), a);
  EXPECT_TRUE(walk(t, {kA}).continues());
  EXPECT_EQ(plan_at(walk(t, {kA, kB})), ab);
  EXPECT_FALSE(walk(t, {kA, kB}).continues());
  EXPECT_TRUE(walk(t, {kA, kC}));  // a prefix of a plan, not a plan
  EXPECT_EQ(plan_at(walk(t, {kA, kC})), nullptr);
  EXPECT_TRUE(walk(t, {kA, kC}).continues());
  EXPECT_EQ(plan_at(walk(t, {kA, kC, kD})), acd);
  EXPECT_FALSE(walk(t, {kB}));
  EXPECT_FALSE(walk(t, {kA, kD}));
  EXPECT_FALSE(walk(t, {kA, kB, kC}));
  EXPECT_FALSE(walk(t, {kA, kC, kA}));
  EXPECT_TRUE(walk(t, {}));  // the root: every plan starts with no ops
  EXPECT_EQ(plan_at(walk(t, {})), nullptr);
}

// A stretch of ops no plan branches or ends in is one edge: only the root, plans and branches
// are nodes. Plans that part inside a run, or end inside one, split it there.
TEST(PlanTrie, RunsOfOpsAreOneEdgeAndSplitWherePlansPart) {
  Trie t;
  const auto long_plan = plan_of({kA, kB, kC, kD, kE});
  t.put(long_plan);
  ASSERT_EQ(t.root()->edges.size(), 1u);
  EXPECT_EQ(t.root()->edges[0].run.size(), 5u);
  for (std::size_t n = 1; n < 5; ++n) {
    const std::vector<core::OpDesc> ops(long_plan->ops.begin(), long_plan->ops.begin() + n);
    EXPECT_TRUE(walk(t, ops)) << n;
    EXPECT_TRUE(walk(t, ops).continues()) << n;
    EXPECT_EQ(plan_at(walk(t, ops)), nullptr) << n;
  }
  EXPECT_EQ(plan_at(walk(t, long_plan->ops)), long_plan);
  EXPECT_FALSE(walk(t, {kA, kB, kD}));  // leaves the run

  const auto ends_inside = plan_of({kA, kB});
  t.put(ends_inside);  // splits after kB
  const auto parts = plan_of({kA, kB, kC, kA});
  t.put(parts);  // splits after kC
  ASSERT_EQ(t.root()->edges.size(), 1u);
  const Trie::Edge& first = t.root()->edges[0];
  EXPECT_EQ(first.run.size(), 2u);
  EXPECT_EQ(first.node->plan, ends_inside);
  ASSERT_EQ(first.node->edges.size(), 1u);
  EXPECT_EQ(first.node->edges[0].run.size(), 1u);  // kC, then the branch
  EXPECT_EQ(first.node->edges[0].node->edges.size(), 2u);
  EXPECT_EQ(plan_at(walk(t, {kA, kB})), ends_inside);
  EXPECT_EQ(plan_at(walk(t, {kA, kB, kC, kA})), parts);
  EXPECT_EQ(plan_at(walk(t, long_plan->ops)), long_plan);

  // Removing the plans that split the run joins it again.
  t.remove(ends_inside->ops);
  t.remove(parts->ops);
  ASSERT_EQ(t.root()->edges.size(), 1u);
  EXPECT_EQ(t.root()->edges[0].run.size(), 5u);
  EXPECT_EQ(plan_at(walk(t, long_plan->ops)), long_plan);
}

TEST(PlanTrie, APlanWithTheSameOpsReplacesTheStoredOneAndReadersKeepWhatTheyHeld) {
  Trie t;
  const auto first = plan_of({kA, kB});
  t.put(first);
  // What a stream in the middle of a segment holds: the root as its segment started.
  const Trie::NodeRef held = t.root();
  const auto second = plan_of({kA, kB});
  t.put(second);
  EXPECT_EQ(plan_at(walk(t, {kA, kB})), second);
  EXPECT_EQ(plan_at(walk(held, {kA, kB})), first);  // the held tree did not change
  t.remove(std::vector<core::OpDesc>{kA, kB});
  EXPECT_FALSE(walk(t, {kA}));
  EXPECT_EQ(plan_at(walk(held, {kA, kB})), first);
}

TEST(PlanTrie, RemovingPrunesNodesWithNoPlanUnderThem) {
  Trie t;
  t.put(plan_of({kA}));
  t.put(plan_of({kA, kB, kC}));
  t.put(plan_of({kA, kD}));
  t.remove(std::vector<core::OpDesc>{kA, kB, kC});
  ASSERT_TRUE(walk(t, {kA}));
  EXPECT_FALSE(walk(t, {kA, kB}));  // pruned: nothing under it any more
  EXPECT_EQ(t.root()->edges[0].node->edges.size(), 1u);
  t.remove(std::vector<core::OpDesc>{kA});  // the path stays while plans are under it
  ASSERT_TRUE(walk(t, {kA}));
  EXPECT_EQ(plan_at(walk(t, {kA})), nullptr);
  EXPECT_EQ(t.root()->edges[0].run.size(), 2u);  // kA and kD: one run again
  t.remove(std::vector<core::OpDesc>{kA, kE});   // not stored: nothing changes
  t.remove(std::vector<core::OpDesc>{kA});       // ends inside a run: nothing stored there
  EXPECT_TRUE(walk(t, {kA, kD}));
  t.remove(std::vector<core::OpDesc>{kA, kD});
  EXPECT_TRUE(t.root()->edges.empty());
}

// Each distinct op is kept once, whatever the number of edges that have it, and is let go of
// once no edge uses it.
TEST(PlanTrie, EdgesShareOneSymbolPerOpAndUnusedOnesAreLetGo) {
  Trie t;
  t.put(plan_of({kA, kB, kC}));
  t.put(plan_of({kB, kB, kC}));
  t.put(plan_of({kC, kA}));
  EXPECT_EQ(t.num_symbols(), 3u);  // kA, kB, kC: nine ops in three runs
  ASSERT_EQ(t.root()->edges.size(), 3u);
  const auto& from_a = t.root()->edges[static_cast<std::size_t>(t.root()->find(kA))].run;
  const auto& from_b = t.root()->edges[static_cast<std::size_t>(t.root()->find(kB))].run;
  EXPECT_EQ(from_a[1], from_b[1]);
  EXPECT_EQ(from_a[1], from_b[0]);
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
  EXPECT_EQ(plan_at(walk(t, {kA, kB, kC}))->ops.size(), 3u);
  EXPECT_FALSE(walk(t, {kD}));
}

// Past kScannedEdges a node finds its edges through an index by hash, kept as edges come and go.
TEST(PlanTrie, AWideNodeFindsEveryEdge) {
  Trie t;
  std::vector<core::OpDesc> seconds;
  t.put(plan_of({kA}));
  for (int i = 0; i < 40; ++i) {
    core::OpDesc o = op(core::OpKind::kAdd);
    o.scalars.push_back(streamfuse::Scalar(static_cast<double>(i)));
    seconds.push_back(o);
    t.put(plan_of({kA, o, kB}));
  }
  ASSERT_GT(t.root()->edges[0].node->edges.size(), Trie::kScannedEdges);
  for (int i = 0; i < 40; i += 3) t.remove(std::vector<core::OpDesc>{kA, seconds[i], kB});
  for (int i = 0; i < 40; ++i) {
    const Trie::Cursor at = walk(t, {kA, seconds[i], kB});
    if (i % 3 == 0) {
      EXPECT_FALSE(at) << i;
    } else {
      ASSERT_TRUE(at) << i;
      EXPECT_EQ(plan_at(at)->ops[1], seconds[i]);
    }
  }
}

// Random puts and removes over a small alphabet (so that runs split, join and branch often),
// checked after each change against a plain list of the stored ops: every prefix of every
// stored or removed sequence finds exactly the plan stored there, continues exactly when a
// longer stored plan starts with it, and nothing else is reachable.
TEST(PlanTrie, RandomChangesMatchAPlainListOfPlans) {
  const std::vector<core::OpDesc> alphabet = {kA, kB, kC};
  std::uint64_t seed = 0x2545f4914f6cdd1dull;
  const auto draw = [&](std::uint64_t n) {
    seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
    return seed % n;
  };
  Trie t;
  std::vector<std::shared_ptr<const fu::ExecutionPlan>> stored;
  std::vector<std::vector<core::OpDesc>> seen;
  for (int change = 0; change < 600; ++change) {
    if (stored.empty() || draw(3) != 0) {
      std::vector<core::OpDesc> ops(1 + draw(6));
      for (core::OpDesc& o : ops) o = alphabet[draw(alphabet.size())];
      const auto plan = plan_of(ops);
      t.put(plan);
      std::erase_if(stored, [&](const auto& p) { return p->ops == ops; });
      stored.push_back(plan);
      seen.push_back(ops);
    } else if (draw(3) == 0) {  // ops that may not be stored (a prefix, a longer run): no-op
      std::vector<core::OpDesc> ops(1 + draw(6));
      for (core::OpDesc& o : ops) o = alphabet[draw(alphabet.size())];
      t.remove(ops);
      std::erase_if(stored, [&](const auto& p) { return p->ops == ops; });
    } else {
      const std::size_t victim = draw(stored.size());
      t.remove(stored[victim]->ops);
      stored.erase(stored.begin() + static_cast<std::ptrdiff_t>(victim));
    }
    for (const auto& ops : seen) {
      for (std::size_t n = 0; n <= ops.size(); ++n) {
        const std::vector<core::OpDesc> prefix(ops.begin(), ops.begin() + static_cast<long>(n));
        std::shared_ptr<const fu::ExecutionPlan> expected;
        bool longer = false;
        for (const auto& p : stored) {
          if (p->ops == prefix) expected = p;
          if (p->ops.size() > n && std::equal(prefix.begin(), prefix.end(), p->ops.begin()))
            longer = true;
        }
        const Trie::Cursor at = walk(t, prefix);
        ASSERT_EQ(plan_at(at), expected) << "change " << change << ", prefix of " << n;
        ASSERT_EQ(static_cast<bool>(at), n == 0 || expected || longer)
            << "change " << change << ", prefix of " << n;
        ASSERT_EQ(at && at.continues(), longer) << "change " << change << ", prefix of " << n;
      }
    }
  }
  EXPECT_LE(t.num_symbols(), 3u + 64u);
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
