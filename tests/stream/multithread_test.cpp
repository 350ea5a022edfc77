// Tensors shared between threads: the producing stream drains first, values are right, drops
// from any thread are safe, and nothing deadlocks. Run under the tsan preset too.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include <streamfuse/streamfuse.h>

#include "runtime/device_runtime.h"

namespace sf = streamfuse;

namespace {

std::size_t st_handles() {
  sf::synchronize();
  return streamfuse::runtime::DeviceRuntime::get(sf::Device::cpu()).handles().size();
}

class MultiThreadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = sf::config();
    sf::Config c = saved_;
    c.queue_bound = 64;  // keep work queued so cross-stream draining happens
    sf::set_config(c);
  }
  void TearDown() override { sf::set_config(saved_); }
  sf::Config saved_;
};

TEST_F(MultiThreadTest, ATensorMadeOnOneThreadIsReadOnAnother) {
  sf::Tensor made;
  std::thread producer([&] { made = sf::arange(100).to(sf::kF32) * 2.0f; });  // queued only
  producer.join();
  EXPECT_EQ(made.to_vector<float>()[99], 198.0f);  // drained at thread exit or by this read
  sf::Tensor queued = sf::ones({8}) * 3.0f;        // queued on this thread
  float seen = 0;
  std::thread consumer([&] { seen = sf::sum(queued + 1.0f).item<float>(); });
  consumer.join();
  EXPECT_EQ(seen, 32.0f);
}

TEST_F(MultiThreadTest, ManyThreadsShareInputsAndEachOthersResults) {
  constexpr int kThreads = 8;
  const sf::Tensor shared = sf::arange(1000).to(sf::kF32);
  std::vector<sf::Tensor> results(kThreads);
  std::vector<std::thread> threads;
  std::atomic<int> ready{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      sf::Tensor acc = shared * static_cast<float>(t);
      for (int i = 0; i < 50; ++i) acc = acc + 1.0f;
      results[static_cast<std::size_t>(t)] = acc;  // still queued on this thread's stream
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      // Read a neighbour's result, likely still queued on its stream.
      const sf::Tensor& other = results[static_cast<std::size_t>((t + 1) % kThreads)];
      const float v = (other + 0.0f).to_vector<float>()[10];
      EXPECT_EQ(v, 10.0f * static_cast<float>((t + 1) % kThreads) + 50.0f);
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t)
    EXPECT_EQ(results[static_cast<std::size_t>(t)].to_vector<float>()[999], 999.0f * t + 50.0f);
}

TEST_F(MultiThreadTest, DroppingTheLastHandleOnAnotherThreadWhileUsesAreQueued) {
  for (int round = 0; round < 20; ++round) {
    sf::Tensor t = sf::full({256}, static_cast<float>(round));
    sf::Tensor use = t * 2.0f;  // queued here, reads t
    std::thread dropper([moved = std::move(t)]() mutable { moved = sf::Tensor(); });  // last handle
    dropper.join();
    EXPECT_EQ(use.to_vector<float>()[255], 2.0f * round);
  }
}

TEST_F(MultiThreadTest, ConcurrentReadersOfOneQueuedTensor) {
  const sf::Tensor x = sf::randn({4096});
  const sf::Tensor y = sf::exp(x) + 1.0f;  // queued on the main stream
  std::vector<std::thread> readers;
  std::vector<float> sums(6);
  for (std::size_t i = 0; i < sums.size(); ++i)
    readers.emplace_back([&, i] { sums[i] = sf::sum(y).item<float>(); });
  for (auto& r : readers) r.join();
  for (float s : sums) EXPECT_EQ(s, sums[0]);
}

TEST_F(MultiThreadTest, ThreadsComeAndGoWithoutLeaking) {
  sf::synchronize();
  const std::size_t handles = st_handles();
  for (int i = 0; i < 50; ++i) {
    std::thread([] {
      sf::Tensor a = sf::ones({32});
      for (int k = 0; k < 10; ++k) a = a * 1.5f;
    }).join();
  }
  EXPECT_EQ(st_handles(), handles);
}

}  // namespace
