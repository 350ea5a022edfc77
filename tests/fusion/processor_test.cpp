// Scenario tests of the segment processor, policy, explorer and plan store with mock builders:
// the decisions are easiest to see here, without kernels.
#include <gtest/gtest.h>

#include <algorithm>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/log.h"
#include "fusion/processor.h"
#include "stream/queue.h"
#include "streamfuse/error.h"

namespace core = streamfuse::core;

namespace st = streamfuse::stream;
namespace fu = streamfuse::fusion;
using streamfuse::Shape;

namespace {

// What ran, in order: "op:<kind>" for eager ops, "opt:<first kind>x<len>" for optimizations.
using Log = std::vector<std::string>;

class MockOptimization final : public fu::Optimization {
 public:
  MockOptimization(std::size_t len, Log& log, bool fail) : len_(len), log_(log), fail_(fail) {}
  std::size_t len() const override { return len_; }
  void execute(fu::ExecutionContext& context) override {
    if (fail_) throw streamfuse::Error("mock kernel failed");
    log_.push_back("opt:" + std::string(core::op_name(context.op(0).kind)) + "x" +
                   std::to_string(len_));
  }
  std::string describe() const override { return "mock"; }

 private:
  std::size_t len_;
  Log& log_;
  bool fail_;
};

// Accepts add and mul (and drops), closes on anything else; each accepted op saves 10 bytes
// beyond the first. May start with add, mul and sum (a sum it then refuses: a segment of one op
// that is matched and gets a plan); any other op at the head of the queue runs on its own.
// Made with an `anchor` kind instead, it is product-like: it starts only with that op, then
// takes adds (and drops), which it lends (lends_steps), saving 10 bytes for each.
class MockBuilder final : public fu::OptimizationBuilder {
 public:
  MockBuilder(Log& log, int& builds, bool fail = false,
              std::optional<core::OpKind> anchor = std::nullopt)
      : log_(log), builds_(builds), fail_(fail), anchor_(anchor) {}
  void register_op(const core::OpDesc& rel, const core::OpDesc&) override {
    if (closed_) return;
    const core::OpKind k = rel.kind;
    // Anchored: the anchor first, then adds; else adds and muls. Drops either way.
    const bool takes = anchor_ && len_ == 0 ? k == *anchor_
                                            : k == core::OpKind::kAdd || k == core::OpKind::kDrop ||
                                                  (!anchor_ && k == core::OpKind::kMul);
    if (takes)
      ++len_;
    else
      closed_ = true;
  }
  fu::BuilderStatus status() const override {
    return closed_ ? fu::BuilderStatus::kClosed : fu::BuilderStatus::kOpen;
  }
  bool may_start_with(core::OpKind kind) const override {
    if (anchor_) return kind == *anchor_;
    return kind == core::OpKind::kAdd || kind == core::OpKind::kMul || kind == core::OpKind::kSum;
  }
  // An anchor alone is no optimization.
  std::size_t len() const override { return anchor_ && len_ < 2 ? 0 : len_; }
  std::int64_t score() const override {
    return len_ > 1 ? 10 * static_cast<std::int64_t>(len_ - 1) : 0;
  }
  bool lends_steps() const override { return anchor_.has_value(); }
  std::unique_ptr<fu::Optimization> build() const override {
    ++builds_;
    return std::make_unique<MockOptimization>(len_, log_, fail_);
  }
  void reset() override {
    closed_ = false;
    len_ = 0;
  }

 private:
  Log& log_;
  int& builds_;
  bool fail_;
  std::optional<core::OpKind> anchor_;
  bool closed_ = false;
  std::size_t len_ = 0;
};

class MockContext final : public fu::ExecutionContext {
 public:
  MockContext(const st::OperationQueue& q, Log& log) : queue_(q), log_(log) {}
  const core::OpDesc& op(std::size_t i) const override { return queue_.global(i); }
  void run_operation(std::size_t i) override {
    log_.push_back("op:" + std::string(core::op_name(queue_.global(i).kind)));
  }
  streamfuse::backends::TensorHandle handle(core::TensorId, core::Failure*) override { return {}; }
  void set_handle(core::TensorId, streamfuse::backends::TensorHandle) override {}
  void set_failed(core::TensorId, core::Failure) override {}
  void erase(core::TensorId) override {}
  streamfuse::backends::Backend& backend() override { std::abort(); }
  streamfuse::jit::KernelLauncher& launcher() override { std::abort(); }

 private:
  const st::OperationQueue& queue_;
  Log& log_;
};

// A little program builder: ops on [batch, 8] f32 tensors with fresh ids.
class Program {
 public:
  explicit Program(std::int64_t batch, core::TensorId first_id = 100)
      : batch_(batch), next_(first_id) {}
  core::TensorId input() { return next_++; }
  // out = kind(a, b) (b == 0: a scalar operand with value `scalar`).
  core::TensorId binary(core::OpKind kind, core::TensorId a, core::TensorId b,
                        float scalar = 1.0f) {
    core::OpDesc op;
    op.kind = kind;
    op.inputs.push_back(desc(a, core::TensorStatus::kReadOnly));
    if (b)
      op.inputs.push_back(desc(b, core::TensorStatus::kReadOnly));
    else {
      op.scalars.push_back(scalar);
      op.attrs.scalar_side = core::ScalarSide::kRhs;
    }
    const core::TensorId out = next_++;
    op.outputs.push_back(desc(out, core::TensorStatus::kNotInit));
    ops.push_back(op);
    return out;
  }
  core::TensorId reduce(core::TensorId a) {
    core::OpDesc op;
    op.kind = core::OpKind::kSum;
    op.attrs.axis = 1;
    op.inputs.push_back(desc(a, core::TensorStatus::kReadOnly));
    const core::TensorId out = next_++;
    op.outputs.push_back({out, Shape{batch_}, streamfuse::kF32, core::TensorStatus::kNotInit});
    ops.push_back(op);
    return out;
  }
  // A reshape to the same shape: an op the builder may not start with.
  core::TensorId view(core::TensorId a) {
    core::OpDesc op;
    op.kind = core::OpKind::kReshape;
    op.inputs.push_back(desc(a, core::TensorStatus::kReadOnly));
    const core::TensorId out = next_++;
    op.outputs.push_back(desc(out, core::TensorStatus::kNotInit));
    ops.push_back(op);
    return out;
  }
  void drop(core::TensorId a) {
    core::OpDesc op;
    op.kind = core::OpKind::kDrop;
    op.inputs.push_back(desc(a, core::TensorStatus::kReadWrite));
    ops.push_back(op);
  }
  std::vector<core::OpDesc> ops;

 private:
  core::TensorDesc desc(core::TensorId id, core::TensorStatus s) const {
    return {id, Shape{batch_, 8}, streamfuse::kF32, s};
  }
  std::int64_t batch_;
  core::TensorId next_;
};

// add, mul, add, then a reduction that closes the builder.
Program chain_then_reduce(std::int64_t batch, float scalar = 2.0f) {
  Program p(batch);
  const core::TensorId x = p.input();
  const core::TensorId a = p.binary(core::OpKind::kAdd, x, x);
  const core::TensorId b = p.binary(core::OpKind::kMul, a, 0, scalar);
  const core::TensorId c = p.binary(core::OpKind::kAdd, b, x);
  p.reduce(c);
  return p;
}

class ProcessorTest : public ::testing::Test {
 protected:
  ProcessorTest() : store_(64, 1000), context_(queue_, log_) {}

  std::unique_ptr<fu::Processor> make(bool fail = false) {
    std::vector<std::unique_ptr<fu::OptimizationBuilder>> b;
    b.push_back(std::make_unique<MockBuilder>(log_, builds_, fail));
    return std::make_unique<fu::Processor>(store_, std::move(b), 8);
  }
  // Pushes ops one at a time, processing lazily after each; then syncs when asked.
  void run(fu::Processor& p, const std::vector<core::OpDesc>& ops, bool sync) {
    for (core::OpDesc op : ops) {
      queue_.push(std::move(op));
      p.process(queue_, context_, fu::ExecutionMode::kLazy);
    }
    if (sync) p.process(queue_, context_, fu::ExecutionMode::kSync);
  }

  fu::PlanStore store_;
  st::OperationQueue queue_;
  Log log_;
  int builds_ = 0;
  MockContext context_;
};

TEST_F(ProcessorTest, DefersWhileExploringThenExecutesWhenTheBuilderCloses) {
  auto p = make();
  Program prog = chain_then_reduce(4);
  // Three fusable ops: the builder is still open, nothing runs.
  for (int i = 0; i < 3; ++i) {
    queue_.push(core::OpDesc(prog.ops[static_cast<std::size_t>(i)]));
    p->process(queue_, context_, fu::ExecutionMode::kLazy);
  }
  EXPECT_TRUE(log_.empty());
  EXPECT_EQ(queue_.size(), 3u);
  // The reduction closes it: the optimization runs the three; no builder takes the reduction
  // either, so it runs at once too (an Always plan).
  queue_.push(core::OpDesc(prog.ops[3]));
  p->process(queue_, context_, fu::ExecutionMode::kLazy);
  EXPECT_EQ(log_, (Log{"opt:addx3", "op:sum"}));
  EXPECT_EQ(store_.size(), 2u);
  EXPECT_EQ(queue_.size(), 0u);
}

TEST_F(ProcessorTest, AStoredPlanIsReusedAcrossBatchSizesAndScalarValues) {
  auto p = make();
  run(*p, chain_then_reduce(4, 2.0f).ops, true);
  const std::size_t plans = store_.size();
  const int builds = builds_;
  const std::uint64_t explorations = store_.explorations();
  log_.clear();
  run(*p, chain_then_reduce(64, -7.5f).ops, true);
  EXPECT_EQ(log_, (Log{"opt:addx3", "op:sum"}));
  EXPECT_EQ(store_.size(), plans) << "no new plan";
  EXPECT_EQ(builds_, builds) << "no new optimization";
  EXPECT_EQ(store_.explorations(), explorations) << "matched, not explored";
}

// The lines STREAMFUSE_LOG=fusion prints while `body` runs.
template <class F>
std::vector<std::string> fusion_log_lines(F&& body) {
  core::set_log_mask(core::parse_log_channels("fusion"));
  ::testing::internal::CaptureStderr();
  body();
  const std::string out = ::testing::internal::GetCapturedStderr();
  core::set_log_mask(0);
  std::vector<std::string> lines;
  for (std::size_t at = 0, nl; (nl = out.find('\n', at)) != std::string::npos; at = nl + 1)
    lines.push_back(out.substr(at, nl - at));
  return lines;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += l + "\n";
  return s;
}

// STREAMFUSE_LOG=fusion: one line per decision, naming what the plan covers (its ops' kinds), how
// it runs, and the op it starts with as recorded.
TEST_F(ProcessorTest, LogsEachDecisionOnOneLine) {
  auto p = make();
  const std::vector<std::string> lines = fusion_log_lines([&] {
    run(*p, chain_then_reduce(4).ops, true);
    run(*p, chain_then_reduce(4).ops, true);
  });
  const std::string out = joined(lines);
  const auto count = [&](const std::string& prefix) {
    return std::count_if(lines.begin(), lines.end(), [&](const std::string& l) {
      return l.rfind("[streamfuse:fusion] " + prefix, 0) == 0;
    });
  };
  const std::string chain = "3 ops (add, mul, add) -> mock; first add(t100:[4, 8]:f32:ro, ";
  EXPECT_EQ(count("explored plan: " + chain), 1) << out;
  EXPECT_EQ(count("matched plan: " + chain), 1) << out;
  EXPECT_EQ(count("executed: " + chain), 2) << out;
  const std::string reduction = "1 op (sum) -> operations; first sum(t103:[4, 8]:f32:ro)";
  EXPECT_EQ(count("explored plan: " + reduction), 1) << out;
  EXPECT_EQ(count("matched plan: " + reduction), 1) << out;
  EXPECT_EQ(count("executed: " + reduction), 2) << out;
  EXPECT_EQ(lines.size(), 8u) << out;
}

// A long plan's line stays short: the kinds of its first and last ops, how many between, and its
// drops counted apart.
TEST_F(ProcessorTest, LogsEveryOpOfALongPlan) {
  std::vector<std::unique_ptr<fu::OptimizationBuilder>> builders;
  builders.push_back(std::make_unique<MockBuilder>(log_, builds_));
  fu::Processor p(store_, std::move(builders), 64);
  Program prog(4);
  core::TensorId a = prog.input();
  const core::TensorId b = prog.input();
  for (int i = 0; i < 15; ++i) {
    const core::TensorId t = prog.binary(core::OpKind::kAdd, a, b);
    a = prog.binary(core::OpKind::kMul, t, 0, 0.5f);
    prog.drop(t);
  }
  prog.reduce(a);
  const std::vector<std::string> lines = fusion_log_lines([&] { run(p, prog.ops, true); });
  ASSERT_FALSE(lines.empty());
  std::string kinds;
  for (int i = 0; i < 15; ++i) kinds += i ? ", add, mul" : "add, mul";
  EXPECT_EQ(lines[0].rfind("[streamfuse:fusion] explored plan: 45 ops (" + kinds +
                               "; 15 drops) -> mock; first add(",
                           0),
            0u)
      << joined(lines);
}

TEST_F(ProcessorTest, OnOperationsTriggerFiresOnTheOpThatClosedExploration) {
  auto p = make();
  run(*p, chain_then_reduce(4).ops, true);
  log_.clear();
  Program prog = chain_then_reduce(16);
  // The three ops fully match the plan, which waits for its trigger (the reduction).
  for (int i = 0; i < 3; ++i) {
    queue_.push(core::OpDesc(prog.ops[static_cast<std::size_t>(i)]));
    p->process(queue_, context_, fu::ExecutionMode::kLazy);
  }
  EXPECT_TRUE(log_.empty()) << "deferred: the trigger has not fired";
  queue_.push(core::OpDesc(prog.ops[3]));
  p->process(queue_, context_, fu::ExecutionMode::kLazy);
  EXPECT_EQ(log_, (Log{"opt:addx3", "op:sum"}));
}

TEST_F(ProcessorTest, AnotherFollowingOpAddsATriggerToTheSamePlan) {
  auto p = make();
  run(*p, chain_then_reduce(4).ops, true);
  const std::size_t plans = store_.size();
  log_.clear();
  // The same three ops followed by a different non-fusable op (a drop is fusable, so use a
  // second reduction over a different input).
  Program prog(4);
  const core::TensorId x = prog.input();
  const core::TensorId a = prog.binary(core::OpKind::kAdd, x, x);
  const core::TensorId b = prog.binary(core::OpKind::kMul, a, 0, 3.0f);
  prog.binary(core::OpKind::kAdd, b, x);
  prog.reduce(x);  // differs from the stored trigger: reduces x, not the last add
  run(*p, prog.ops, true);
  EXPECT_EQ(log_, (Log{"opt:addx3", "op:sum"}));
  EXPECT_EQ(store_.size(), plans + 0) << "the plan got a second trigger, not a twin";
  log_.clear();
  run(*p, prog.ops, true);
  EXPECT_EQ(log_, (Log{"opt:addx3", "op:sum"}));
}

TEST_F(ProcessorTest, SyncRunsEverythingAndLeavesAnOnSyncPlan) {
  auto p = make();
  Program prog(4);
  const core::TensorId x = prog.input();
  prog.binary(core::OpKind::kMul, prog.binary(core::OpKind::kAdd, x, x), 0);
  run(*p, prog.ops, true);
  EXPECT_EQ(log_, (Log{"opt:addx2"}));
  log_.clear();
  // Again, lazily: fully matched, waiting for a sync (no op follows).
  Program again(32);
  const core::TensorId y = again.input();
  again.binary(core::OpKind::kMul, again.binary(core::OpKind::kAdd, y, y), 0);
  run(*p, again.ops, false);
  EXPECT_TRUE(log_.empty());
  p->process(queue_, context_, fu::ExecutionMode::kSync);
  EXPECT_EQ(log_, (Log{"opt:addx2"}));
  EXPECT_EQ(store_.size(), 1u);
}

TEST_F(ProcessorTest, AlwaysTriggerForOpsNoBuilderTakes) {
  auto p = make();
  Program prog(4);
  prog.reduce(prog.input());
  queue_.push(core::OpDesc(prog.ops[0]));
  p->process(queue_, context_, fu::ExecutionMode::kLazy);
  EXPECT_EQ(log_, (Log{"op:sum"})) << "nothing could follow: runs at once, even lazily";
  log_.clear();
  queue_.push(core::OpDesc(prog.ops[0]));
  p->process(queue_, context_, fu::ExecutionMode::kLazy);
  EXPECT_EQ(log_, (Log{"op:sum"}));
  EXPECT_EQ(store_.size(), 1u);
}

TEST_F(ProcessorTest, OpsNoBuilderMayStartWithRunAloneUnmatched) {
  auto p = make();
  const auto program = [](std::int64_t batch) {
    Program prog(batch);
    const core::TensorId x = prog.input();
    const core::TensorId a = prog.binary(core::OpKind::kAdd, x, x);
    const core::TensorId b = prog.binary(core::OpKind::kMul, a, 0, 2.0f);
    prog.drop(a);                           // inside a segment: the builder takes it
    const core::TensorId v = prog.view(b);  // ends that segment, then runs on its own
    prog.drop(b);                           // at the head: on its own
    prog.binary(core::OpKind::kMul, prog.binary(core::OpKind::kAdd, v, v), 0, 0.5f);
    return prog;
  };
  // Lazily: the view and the drop run as soon as they reach the head, with no plan.
  run(*p, program(4).ops, /*sync=*/false);
  EXPECT_EQ(log_, (Log{"opt:addx3", "op:reshape", "op:drop"}));
  p->process(queue_, context_, fu::ExecutionMode::kSync);
  EXPECT_EQ(log_, (Log{"opt:addx3", "op:reshape", "op:drop", "opt:addx2"}));
  EXPECT_EQ(store_.size(), 2u) << "plans for the two segments only";
  // The first plan's successor is the next segment with a plan, past the ops that ran alone.
  st::OperationQueue q;
  for (const core::OpDesc& op : program(4).ops) q.push(core::OpDesc(op));
  fu::PlanRefs starting;  // both plans start with an add of a tensor to itself
  store_.starting_with(q.relative(0), starting);
  ASSERT_EQ(starting.size(), 2u);
  const fu::PlanRef& first = starting[0]->len() == 3 ? starting[0] : starting[1];
  ASSERT_EQ(first->len(), 3u);
  ASSERT_EQ(first->successors.size(), 1u);
  EXPECT_EQ(first->successors[0].kind, core::OpKind::kAdd);
  // Again at another batch size: the same, matched, nothing explored.
  log_.clear();
  run(*p, program(16).ops, /*sync=*/true);
  EXPECT_EQ(log_, (Log{"opt:addx3", "op:reshape", "op:drop", "opt:addx2"}));
  EXPECT_EQ(store_.size(), 2u);
  EXPECT_EQ(builds_, 2);
}

// Tells nobody anything: only its presence matters.
class SilentObserver final : public fu::ExecutionObserver {
 public:
  void executed(const fu::PlanRef&, const fu::SegmentQueue&, std::size_t, bool) override {}
};

// What a stream asks before it runs a view or a drop as it records it (Stream::record): whether
// the op, at the head of an empty queue, would run on its own now with nobody told. Not while a
// segment is fed, not with an observer (sf::compile records what runs) or the fusion log on
// (it names what ran), and never for an op a builder may start a segment with.
TEST_F(ProcessorTest, RunsAloneUnreportedOnlyWhereProcessWouldRunItAloneUntold) {
  auto p = make();
  EXPECT_TRUE(p->runs_alone_unreported(core::OpKind::kReshape));
  EXPECT_TRUE(p->runs_alone_unreported(core::OpKind::kDrop));
  EXPECT_FALSE(p->runs_alone_unreported(core::OpKind::kAdd));
  Program prog(4);
  const core::TensorId x = prog.input();
  prog.binary(core::OpKind::kAdd, x, x);
  queue_.push(core::OpDesc(prog.ops[0]));
  p->process(queue_, context_, fu::ExecutionMode::kLazy);
  ASSERT_EQ(queue_.size(), 1u) << "the add waits for what may follow";
  EXPECT_FALSE(p->runs_alone_unreported(core::OpKind::kReshape)) << "a segment is fed";
  p->process(queue_, context_, fu::ExecutionMode::kSync);
  EXPECT_TRUE(p->runs_alone_unreported(core::OpKind::kReshape));
  SilentObserver observer;
  p->set_observer(&observer);
  EXPECT_FALSE(p->runs_alone_unreported(core::OpKind::kReshape)) << "an observer is told";
  p->set_observer(nullptr);
  core::set_log_mask(core::parse_log_channels("fusion"));
  EXPECT_FALSE(p->runs_alone_unreported(core::OpKind::kReshape)) << "the log names it";
  core::set_log_mask(0);
  EXPECT_TRUE(p->runs_alone_unreported(core::OpKind::kReshape));
}

// Records the entries a store notes; holds no plans.
class EntriesPersistence final : public fu::PlanPersistence {
 public:
  std::vector<fu::PlanDraft> load(const core::OpDesc&) override { return {}; }
  void save(std::shared_ptr<const fu::ExecutionPlan>) override {}
  std::vector<core::OpDesc> entries() override { return noted; }
  void save_entry(const core::OpDesc& first) override { noted.push_back(first); }
  std::vector<core::OpDesc> noted;
};

TEST_F(ProcessorTest, TheFirstSegmentThatRunsAPlanIsNotedAsAnEntryOnce) {
  auto persistence = std::make_shared<EntriesPersistence>();
  store_.set_persistence(persistence);
  auto p = make();
  Program prog(4);
  const core::TensorId v = prog.view(prog.input());  // runs on its own: no plan, no entry
  const core::TensorId a = prog.binary(core::OpKind::kMul, v, v);
  prog.reduce(prog.binary(core::OpKind::kAdd, a, 0));
  run(*p, prog.ops, /*sync=*/true);
  run(*p, prog.ops, /*sync=*/true);
  ASSERT_EQ(persistence->noted.size(), 1u);
  EXPECT_EQ(persistence->noted[0].kind, core::OpKind::kMul);
}

TEST_F(ProcessorTest, CandidatesAreInvalidatedByTheFirstDifferingOp) {
  auto p = make();
  run(*p, chain_then_reduce(4).ops, true);
  log_.clear();
  // Same first two ops, then a different third: the candidate drops out, exploration starts.
  Program prog(4);
  const core::TensorId x = prog.input();
  const core::TensorId a = prog.binary(core::OpKind::kAdd, x, x);
  const core::TensorId b = prog.binary(core::OpKind::kMul, a, 0, 2.0f);
  prog.binary(core::OpKind::kMul, b, b);  // mul instead of add
  prog.reduce(b);
  run(*p, prog.ops, true);
  EXPECT_EQ(log_, (Log{"opt:addx3", "op:sum"}));
  EXPECT_EQ(store_.size(), 3u) << "a new plan for the new segment";
}

TEST_F(ProcessorTest, SegmentsAreBoundedSoEndlessLoopsRepeatAPlan) {
  auto p = make();  // bound: 8 ops
  Program prog(4);
  core::TensorId a = prog.input();
  const core::TensorId b = prog.input();
  for (int i = 0; i < 200; ++i)
    a = prog.binary(core::OpKind::kMul, prog.binary(core::OpKind::kAdd, a, b), 0, 0.5f);
  run(*p, prog.ops, true);
  EXPECT_EQ(log_.size(), 400u / 8);
  for (const std::string& entry : log_) EXPECT_EQ(entry, "opt:addx8");
  EXPECT_LE(store_.size(), 2u) << "one plan repeating (the ops are the same every 8)";
  EXPECT_EQ(builds_, 1);
}

TEST_F(ProcessorTest, PlansAreRejectedWhenSizeBindingsChanged) {
  auto p = make();
  run(*p, chain_then_reduce(4).ops, true);
  log_.clear();
  // Forge a queue whose relative form matches the plan but whose real sizes break it: the
  // relative converter is bypassed by editing the recorded global shapes after the fact is not
  // possible, so check bindings_match directly on a hand-made queue.
  const fu::PlanRefs plans = [&] {
    fu::PlanRefs out;
    st::OperationQueue q;
    for (const core::OpDesc& op : chain_then_reduce(4).ops) q.push(core::OpDesc(op));
    store_.starting_with(q.relative(0), out);
    return out;
  }();
  ASSERT_EQ(plans.size(), 1u);
  st::OperationQueue good, wrong;
  for (const core::OpDesc& op : chain_then_reduce(9).ops) good.push(core::OpDesc(op));
  EXPECT_TRUE(fu::bindings_match(*plans[0], good));
  // Sizes that were different ids (batch and 8) are now equal.
  for (const core::OpDesc& op : chain_then_reduce(8).ops) wrong.push(core::OpDesc(op));
  EXPECT_FALSE(fu::bindings_match(*plans[0], wrong));
  // A size-1 binding where the plan had a size.
  st::OperationQueue one;
  for (const core::OpDesc& op : chain_then_reduce(1).ops) one.push(core::OpDesc(op));
  EXPECT_FALSE(fu::bindings_match(*plans[0], one));
}

TEST_F(ProcessorTest, AFailingOptimizationFallsBackToTheOps) {
  auto p = make(/*fail=*/true);
  run(*p, chain_then_reduce(4).ops, true);
  EXPECT_EQ(log_, (Log{"op:add", "op:mul", "op:add", "op:sum"}));
}

TEST_F(ProcessorTest, TheStoreEvictsTheLeastRecentlyUsedPlan) {
  fu::PlanStore small(2, 1000);
  auto plan = [](core::OpKind kind) {
    fu::PlanDraft d;
    Program p(4);
    p.binary(kind, p.input(), 0);
    st::OperationQueue q;
    q.push(core::OpDesc(p.ops[0]));
    d.ops.push_back(q.relative(0));
    d.triggers.push_back({fu::Trigger::Kind::kAlways, {}});
    return d;
  };
  fu::PlanRef add = small.add(plan(core::OpKind::kAdd));
  fu::PlanRef mul = small.add(plan(core::OpKind::kMul));
  small.touch(*mul);
  small.touch(*mul);
  small.touch(*mul);
  small.touch(*add);
  small.add(plan(core::OpKind::kSub));  // full: the least recently used (mul, used more) goes
  EXPECT_EQ(small.size(), 2u);
  fu::PlanRefs found;
  small.starting_with(add->ops[0], found);
  EXPECT_EQ(found.size(), 1u);
  found.clear();
  small.starting_with(mul->ops[0], found);
  EXPECT_TRUE(found.empty());
}

TEST_F(ProcessorTest, PastTheExplorationCapOpsRunOneByOne) {
  fu::PlanStore capped(64, 0);
  std::vector<std::unique_ptr<fu::OptimizationBuilder>> b;
  b.push_back(std::make_unique<MockBuilder>(log_, builds_));
  fu::Processor p(capped, std::move(b), 8);
  for (const core::OpDesc& op : chain_then_reduce(4).ops) {
    queue_.push(core::OpDesc(op));
    p.process(queue_, context_, fu::ExecutionMode::kLazy);
  }
  p.process(queue_, context_, fu::ExecutionMode::kSync);
  EXPECT_EQ(log_, (Log{"op:add", "op:mul", "op:add", "op:sum"}));
  EXPECT_EQ(capped.size(), 0u);
}

// A builder that lends its steps (a MockBuilder anchored on sum) keeps them only where the builders
// after its first op would save fewer bytes with them than it and the plan after it do; a tie goes
// to the split.
TEST_F(ProcessorTest, StepsALenderTakesGoWhereTheyAreWorthMore) {
  // Each case with a store of its own: the first's plans start with the same sum.
  auto make_with_lender = [&](fu::PlanStore& store) {
    std::vector<std::unique_ptr<fu::OptimizationBuilder>> b;
    b.push_back(std::make_unique<MockBuilder>(log_, builds_));
    b.push_back(std::make_unique<MockBuilder>(log_, builds_, false, core::OpKind::kSum));
    return std::make_unique<fu::Processor>(store, std::move(b), 8);
  };
  // sum, add, add, then a mul of the second add's result (last_is_mul) or a view of it.
  auto sum_add_add = [](std::int64_t batch, bool last_is_mul) {
    Program prog(batch);
    const core::TensorId x = prog.input();
    const core::TensorId s = prog.reduce(x);
    const core::TensorId a = prog.binary(core::OpKind::kAdd, s, x);
    const core::TensorId b = prog.binary(core::OpKind::kAdd, a, x);
    if (last_is_mul)
      prog.binary(core::OpKind::kMul, b, 0, 2.0f);
    else
      prog.view(b);
    return prog;
  };
  {
    // Then a mul: the lender's 20 bytes against 20 for add, add, mul after the sum.
    fu::PlanStore store(64, 1000);
    auto p = make_with_lender(store);
    run(*p, sum_add_add(4, true).ops, false);
    EXPECT_TRUE(log_.empty()) << "lazy: the plan after the lender's is not known yet";
    p->process(queue_, context_, fu::ExecutionMode::kSync);
    EXPECT_EQ(log_, (Log{"op:sum", "opt:addx3"}));
  }
  log_.clear();
  {
    // Then a view: 20 bytes against 10 for add, add; decided as the view arrives.
    fu::PlanStore store(64, 1000);
    auto p = make_with_lender(store);
    const int builds = builds_;
    run(*p, sum_add_add(6, false).ops, false);
    EXPECT_EQ(log_, (Log{"opt:sumx3", "op:reshape"}));
    EXPECT_EQ(builds_, builds + 1) << "one optimization built: the lender's";
  }
}

}  // namespace
