// ElementwiseOptimization::execute is all or nothing. With a launcher that may fail to build a
// kernel (CUDA has no interpreter to fall back on) and a segment whose first kernel overwrites a
// lent input, every kernel is made sure of before the first one runs: a failure then launches
// nothing and publishes nothing, so the processor can run the segment's ops one by one, reading
// inputs that no kernel overwrote in place.
#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "fusion/context.h"
#include "tests/fusion/recorded_segment.h"

namespace core = streamfuse::core;

namespace sf = streamfuse;

namespace {

// Launches nothing; says which calls it got. `fail_require_at`: the require() call (counted from
// 0) that throws, or -1.
class FakeLauncher final : public sf::jit::KernelLauncher {
 public:
  FakeLauncher(bool may_fail, int fail_require_at)
      : may_fail_(may_fail), fail_at_(fail_require_at) {}
  void launch(const sf::jit::FusedProgram&, const sf::jit::ProgramFacts&, const sf::Shape&,
              std::span<const sf::jit::LaunchOperand>, std::span<const sf::jit::LaunchOperand>,
              std::span<const std::int64_t>) override {
    calls.push_back("launch");
  }
  bool may_fail() const override { return may_fail_; }
  void require(const sf::jit::FusedProgram&, const sf::jit::ProgramFacts&, const sf::Shape&,
               std::span<const sf::jit::LaunchOperand>, std::span<const sf::jit::LaunchOperand>,
               std::span<const std::int64_t>) override {
    if (requires_++ == fail_at_) throw sf::Error("no kernel (test)");
    calls.push_back("require");
  }
  std::vector<std::string> calls;

 private:
  bool may_fail_;
  int fail_at_;
  int requires_ = 0;
};

// Handles of fresh CPU memory for the segment's inputs, held as a handle container holds them
// (so a moved input can be lent to an output); remembers what was published.
class TestContext final : public sf::fusion::ExecutionContext {
 public:
  TestContext(const std::vector<core::OpDesc>& ops, sf::jit::KernelLauncher& launcher)
      : ops_(ops), launcher_(launcher) {}
  const core::OpDesc& op(std::size_t i) const override { return ops_.at(i); }
  void run_operation(std::size_t) override { ADD_FAILURE() << "run_operation"; }
  sf::backends::TensorHandle handle(core::TensorId id, core::Failure*) override {
    if (auto it = held_.find(id); it != held_.end()) return it->second;
    for (const core::OpDesc& o : ops_)
      for (const core::TensorDesc& d : o.inputs)
        if (d.id == id) return held_[id] = backend_.allocate(d.shape, d.dtype);
    ADD_FAILURE() << "no input t" << id;
    return {};
  }
  void set_handle(core::TensorId, sf::backends::TensorHandle) override { ++published; }
  void set_failed(core::TensorId, core::Failure) override { ++published; }
  void erase(core::TensorId) override {}
  sf::backends::Backend& backend() override { return backend_; }
  sf::jit::KernelLauncher& launcher() override { return launcher_; }
  int published = 0;

 private:
  const std::vector<core::OpDesc>& ops_;
  sf::jit::KernelLauncher& launcher_;
  sf::backends::cpu::CpuBackend backend_;
  std::map<core::TensorId, sf::backends::TensorHandle> held_;
};

// Two kernels (two shapes), the first lending a moved input's buffer to its output when `move`.
struct TwoKernels {
  sf::testing::RecordedOps ops;
  std::unique_ptr<sf::fusion::Optimization> optimization;
};
TwoKernels two_kernels(bool move = true) {
  sf::Tensor a = sf::randn({4, 8});
  const sf::Tensor c = sf::randn({16});
  sf::Tensor p, q;
  TwoKernels t;
  t.ops = sf::testing::record_without_running([&] {
    p = move ? sf::exp(std::move(a)) * 2.0f : sf::exp(a) * 2.0f;
    q = sf::exp(c + 1.0f) * c;
  });
  sf::fusion::ElementwiseBuilder builder;
  for (std::size_t i = 0; i < t.ops.global.size(); ++i)
    builder.register_op(t.ops.relative[i], t.ops.global[i]);
  t.optimization = builder.build();
  return t;
}

TEST(ElementwiseOptimizationTest, ALauncherThatMayFailIsAskedForEveryKernelFirst) {
  const TwoKernels t = two_kernels();
  FakeLauncher launcher(/*may_fail=*/true, /*fail_require_at=*/-1);
  TestContext context(t.ops.global, launcher);
  t.optimization->execute(context);
  EXPECT_EQ(launcher.calls, (std::vector<std::string>{"require", "require", "launch", "launch"}));
  EXPECT_GT(context.published, 0);
}

TEST(ElementwiseOptimizationTest, AKernelThatCannotBeBuiltLaunchesNothingAndPublishesNothing) {
  const TwoKernels t = two_kernels();
  FakeLauncher launcher(/*may_fail=*/true, /*fail_require_at=*/1);  // the second kernel
  TestContext context(t.ops.global, launcher);
  EXPECT_THROW(t.optimization->execute(context), sf::Error);
  EXPECT_TRUE(launcher.calls == std::vector<std::string>{"require"})
      << "the first kernel, which writes over a lent input, never ran";
  EXPECT_EQ(context.published, 0);
}

TEST(ElementwiseOptimizationTest, WithNothingLentNoKernelIsAskedForFirst) {
  const TwoKernels t = two_kernels(/*move=*/false);
  FakeLauncher launcher(/*may_fail=*/true, /*fail_require_at=*/0);
  TestContext context(t.ops.global, launcher);
  t.optimization->execute(context);
  EXPECT_EQ(launcher.calls, (std::vector<std::string>{"launch", "launch"}))
      << "a failing launch would change nothing the fallback reads";
}

TEST(ElementwiseOptimizationTest, ALauncherWithAFallbackIsNotAsked) {
  const TwoKernels t = two_kernels();
  FakeLauncher launcher(/*may_fail=*/false, /*fail_require_at=*/0);
  TestContext context(t.ops.global, launcher);
  t.optimization->execute(context);
  EXPECT_EQ(launcher.calls, (std::vector<std::string>{"launch", "launch"}));
}

}  // namespace
