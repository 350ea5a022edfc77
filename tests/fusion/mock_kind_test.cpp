// A new optimization kind is its folder and one registration: the mock kind (mock_kind/) is
// registered here and nowhere else, is explored, wins, runs, and persists through its codec.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <vector>

#include "cache/cache_file.h"
#include "fusion/builders/registry.h"
#include "fusion/plan_codec.h"
#include "runtime/device_runtime.h"
#include "streamfuse/streamfuse.h"
#include "tests/fusion/mock_kind/mock_kind.h"
#include "tests/fusion/mock_kind/optimization.h"
#include "tests/scoped_env.h"
#include "tests/temp_dir.h"

namespace sf = streamfuse;
namespace fs = std::filesystem;

namespace streamfuse::testing {
namespace {

TEST(MockKind, IsExploredRunAndPersistedThroughTheRegistryAlone) {
  TempDir dir;
  ScopedEnv cache_dir("STREAMFUSE_CACHE_DIR", dir.path());
  ScopedEnv jit("STREAMFUSE_JIT", "interpret");  // no compiles outliving the directory
  // Before the first op: streams made from now on get its builder.
  fusion::add_optimization_kind(mock_kind::kind());
  EXPECT_THROW(fusion::add_optimization_kind(mock_kind::kind()), Error);

  {
    const sf::Tensor x = sf::from_vector<float>({-1.5f, 2.0f, -3.0f, 0.0f}, {4});
    for (int i = 0; i < 3; ++i) {
      {
        const sf::Tensor y = sf::abs(sf::abs(x));  // a segment of two abs ops, then a sync
        EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1.5f, 2.0f, 3.0f, 0.0f}));
      }
      sf::synchronize(sf::Device::cpu());  // y's Drop runs: the next segment starts with abs
    }
  }
  sf::synchronize(sf::Device::cpu());  // x's Drop too: nothing is learned after the test
  EXPECT_GE(mock_kind::runs().load(), 3) << "the mock kind's plan did not run each time";

  // Its plan is in the store and on disk, and decodes through its codec.
  runtime::DeviceRuntime& rt = runtime::DeviceRuntime::get(sf::Device::cpu());
  std::shared_ptr<const fusion::ExecutionPlan> mock;
  for (const fusion::PlanRef& plan : rt.plan_store().plans())
    if (plan->optimization && plan->optimization->codec() == "mock") mock = plan;
  ASSERT_TRUE(mock);
  EXPECT_EQ(mock->optimization->len(), 2u);
  rt.plan_files().flush();
  int on_disk = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir.path() + "/plans")) {
    if (e.path().extension() != ".plan") continue;
    const cache::ReadResult r =
        cache::read_cache_file(e.path(), cache::FileKind::kPlan, cache::portable_fingerprint());
    ASSERT_TRUE(r) << e.path();
    const fusion::PlanDraft draft = fusion::decode_plan(r.payload);
    if (draft.optimization && draft.optimization->codec() == "mock") {
      ++on_disk;
      EXPECT_NE(dynamic_cast<const mock_kind::MockOptimization*>(draft.optimization.get()),
                nullptr);
      EXPECT_EQ(draft.optimization->len(), 2u);
    }
  }
  EXPECT_EQ(on_disk, 1);
}

}  // namespace
}  // namespace streamfuse::testing
