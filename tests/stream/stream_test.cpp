// Streams defer ops until a sync or the queue bound; values are the same whenever they run.
#include <gtest/gtest.h>

#include <streamfuse/streamfuse.h>

#include "runtime/device_runtime.h"
#include "stream/stream.h"

namespace runtime = streamfuse::runtime;

namespace sf = streamfuse;
namespace st = streamfuse::stream;

namespace {

st::Stream& this_stream() {
  return *runtime::DeviceRuntime::get(sf::Device::cpu()).streams().current();
}

class StreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sf::synchronize();
    saved_ = sf::config();
  }
  void TearDown() override {
    sf::set_config(saved_);
    sf::synchronize();
  }
  void set_bound(std::size_t bound) {
    sf::Config c = saved_;
    c.queue_bound = bound;
    sf::set_config(c);
  }
  sf::Config saved_;
};

TEST_F(StreamTest, OpsWaitForASync) {
  set_bound(1000);
  const std::uint64_t ran = this_stream().executed();
  sf::Tensor x = sf::ones({16});
  sf::Tensor y = x * 2.0f + 1.0f;
  EXPECT_EQ(this_stream().executed(), ran) << "nothing ran yet";
  EXPECT_EQ(this_stream().queue_for_testing().size(), 3u);
  EXPECT_EQ(y.to_vector<float>(), std::vector<float>(16, 3.0f));
  EXPECT_EQ(this_stream().executed(), ran + 3);
  EXPECT_TRUE(this_stream().queue_for_testing().empty());
}

TEST_F(StreamTest, TheQueueBoundRunsQueuedOps) {
  set_bound(4);
  const std::uint64_t ran = this_stream().executed();
  sf::Tensor x = sf::ones({4});
  for (int i = 0; i < 3; ++i) x = x + 1.0f;  // each assignment also drops the old x
  EXPECT_GT(this_stream().executed(), ran);
  EXPECT_LT(this_stream().queue_for_testing().size(), 4u);
  EXPECT_EQ(x.to_vector<float>(), std::vector<float>(4, 4.0f));
}

TEST_F(StreamTest, SynchronizeRunsEverything) {
  set_bound(1000);
  sf::Tensor x = sf::ones({4}) * 5.0f;
  sf::synchronize();
  EXPECT_TRUE(this_stream().queue_for_testing().empty());
  EXPECT_FALSE(this_stream().pending());
}

TEST_F(StreamTest, ResultsDoNotDependOnWhenOpsRun) {
  auto program = [] {
    sf::manual_seed(5);
    sf::Tensor x = sf::randn({300});
    sf::Tensor y = x;
    for (int i = 0; i < 20; ++i) y = sf::tanh(y) * 1.5f + x;
    return y.to_vector<float>();
  };
  set_bound(1);
  const auto eager = program();
  set_bound(7);
  EXPECT_EQ(program(), eager);
  set_bound(100000);
  EXPECT_EQ(program(), eager);
}

}  // namespace
