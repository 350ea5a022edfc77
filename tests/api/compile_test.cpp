// sf::compile (include/streamfuse/compile.h): a compiled function gives exactly what the same
// code gives uncompiled, replays once its plans are known, records again whenever a guard does
// not hold, and never replays what a replay could not reproduce.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <streamfuse/streamfuse.h>

#include "runtime/device_runtime.h"
#include "stream/stream.h"
#include "tests/expect_error.h"
#include "tests/own_cache_dir.h"

namespace sf = streamfuse;
using streamfuse::testing::expect_error;

namespace {

// A small transformer-style step: matmul, bias, GELU, a softmax and a layer norm, as users write.
sf::Tensor block(const sf::Tensor& x, const sf::Tensor& w, const sf::Tensor& bias) {
  sf::Tensor h = sf::nn::gelu(sf::matmul(x, w) + bias);
  sf::Tensor p = sf::nn::softmax(h * 0.125f, -1);
  return sf::nn::layer_norm(p + x, {x.size(-1)}, {}, {}) * 2.0f;
}

std::vector<float> values(const sf::Tensor& t) { return t.to_vector<float>(); }

std::uint64_t recorded_ops() {
  return sf::runtime::DeviceRuntime::get(sf::Device::cpu()).streams().current()->next_seq();
}

class Compile : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = sf::config(); }
  void TearDown() override { sf::set_config(saved_); }
  sf::Config saved_;
};

TEST_F(Compile, ReplaysAfterItsPlansAreKnownAndGivesWhatPlainCodeGives) {
  // erf at the end: ops no other test records, so the plans are this test's own to explore.
  const auto own = [](const sf::Tensor& x, const sf::Tensor& w, const sf::Tensor& bias) {
    return sf::erf(block(x, w, bias));
  };
  auto f = sf::compile(own, {.name = "block"});
  const sf::Tensor w = sf::randn({16, 16}), bias = sf::randn({16});
  std::int64_t explored_by_first_call = 0;
  for (int call = 0; call < 6; ++call) {
    const sf::Tensor x = sf::randn({4, 16});
    sf::synchronize();
    const std::int64_t explored = sf::fusion_stats().plans_explored;
    const sf::Tensor y = f(x, w, bias);
    if (call == 0) explored_by_first_call = sf::fusion_stats().plans_explored - explored;
    EXPECT_EQ(values(y), values(own(x, w, bias))) << "call " << call;
    EXPECT_EQ(y.shape(), (sf::Shape{4, 16}));
  }
  const sf::CompileStats s = f.stats();
  // A first call that explores plans is not kept (the next may match others); the call after
  // it runs known ones and is kept. The rest replay. (A repeated run of this test finds the
  // plans made: its first call is kept.)
  const std::size_t recorded = explored_by_first_call > 0 ? 2 : 1;
  EXPECT_EQ(s.recorded_calls, recorded);
  EXPECT_EQ(s.replayed_calls, 6 - recorded);
  EXPECT_EQ(s.traces, 1u);
  EXPECT_TRUE(s.replays);
}

TEST_F(Compile, AReplayRecordsNoOps) {
  auto f = sf::compile([](const sf::Tensor& a, const sf::Tensor& b) { return (a + b) * 0.5f; });
  const sf::Tensor a = sf::randn({8}), b = sf::randn({8});
  for (int call = 0; call < 3; ++call) (void)f(a, b).to_vector<float>();
  sf::synchronize();
  const std::size_t replayed = f.stats().replayed_calls;
  const std::uint64_t before = recorded_ops();
  sf::Tensor y = f(a, b);
  EXPECT_EQ(recorded_ops(), before);  // ran at once: nothing queued, nothing matched
  EXPECT_EQ(f.stats().replayed_calls, replayed + 1);
  EXPECT_EQ(values(y), values((a + b) * 0.5f));
}

TEST_F(Compile, EachGuardThatFailsRecordsTheCallAgain) {
  auto f = sf::compile(
      [](const sf::Tensor& a, const sf::Tensor& b, float s) { return sf::exp(a - b) * s; });
  const auto plain = [](const sf::Tensor& a, const sf::Tensor& b, float s) {
    return sf::exp(a - b) * s;
  };
  const sf::Tensor a = sf::randn({3, 5}), b = sf::randn({3, 5});
  for (int call = 0; call < 3; ++call) EXPECT_EQ(values(f(a, b, 2.0f)), values(plain(a, b, 2.0f)));
  const std::size_t replayed = f.stats().replayed_calls;
  EXPECT_GE(replayed, 1u);

  struct Case {
    const char* what;
    sf::Tensor a, b;
    float s;
  };
  const sf::Tensor row = sf::randn({1, 5});
  const Case cases[] = {
      {"another number", a, b, 3.0f},
      {"another dtype", a.to(sf::kF64), b.to(sf::kF64), 2.0f},
      {"another rank", sf::randn({2, 3, 5}), sf::randn({2, 3, 5}), 2.0f},
      {"a size 1 (broadcast)", a, row, 2.0f},
      {"the same tensor twice", a, a, 2.0f},
      {"two sizes that were different now equal", sf::randn({5, 5}), sf::randn({5, 5}), 2.0f},
  };
  for (const Case& c : cases) {
    const std::size_t recorded = f.stats().recorded_calls;
    const sf::Tensor y = f(c.a, c.b, c.s);
    if (c.a.dtype() == sf::kF64)
      EXPECT_EQ(y.to_vector<double>(), plain(c.a, c.b, c.s).to_vector<double>()) << c.what;
    else
      EXPECT_EQ(values(y), values(plain(c.a, c.b, c.s))) << c.what;
    EXPECT_EQ(f.stats().recorded_calls, recorded + 1) << c.what << ": not recorded";
  }
}

TEST_F(Compile, ManyWeightArgumentsWithAndWithoutAliases) {
  // An MLP of 20 layers, its weights one vector argument.
  const auto mlp = [](const sf::Tensor& x, const std::vector<sf::Tensor>& w) {
    sf::Tensor h = x;
    for (std::size_t i = 0; i + 1 < w.size(); i += 2) h = sf::relu(sf::matmul(h, w[i]) + w[i + 1]);
    return h;
  };
  auto f = sf::compile(mlp);
  std::vector<sf::Tensor> w;
  for (int layer = 0; layer < 20; ++layer) {
    w.push_back(sf::randn({8, 8}) * 0.3f);
    w.push_back(sf::randn({8}));
  }
  const sf::Tensor x = sf::randn({2, 8});
  for (int call = 0; call < 3; ++call) EXPECT_EQ(values(f(x, w)), values(mlp(x, w)));
  EXPECT_GE(f.stats().replayed_calls, 1u);
  // The same layer's weights everywhere: another aliasing is another guard, recorded (once or
  // twice: its plans may exist), then replayed.
  std::vector<sf::Tensor> shared(w.size(), w[0]);
  for (std::size_t i = 1; i < shared.size(); i += 2) shared[i] = w[1];
  std::size_t recorded = f.stats().recorded_calls;
  for (int call = 0; call < 3; ++call) EXPECT_EQ(values(f(x, shared)), values(mlp(x, shared)));
  EXPECT_GE(f.stats().recorded_calls, recorded + 1);
  EXPECT_LE(f.stats().recorded_calls, recorded + 2);
  // The first trace again: distinct weights.
  recorded = f.stats().recorded_calls;
  EXPECT_EQ(values(f(x, w)), values(mlp(x, w)));
  EXPECT_EQ(f.stats().recorded_calls, recorded);
}

TEST_F(Compile, ASizeThatChangedBetweenRecordingsIsReplayedAtAnySize) {
  auto f = sf::compile(block);
  const sf::Tensor w = sf::randn({16, 16}), bias = sf::randn({16});
  for (std::int64_t rows : {4, 4, 4, 8, 8}) (void)values(f(sf::randn({rows, 16}), w, bias));
  const std::size_t recorded = f.stats().recorded_calls;
  for (std::int64_t rows : {32, 3, 100}) {
    const sf::Tensor x = sf::randn({rows, 16});
    EXPECT_EQ(values(f(x, w, bias)), values(block(x, w, bias))) << rows << " rows";
  }
  EXPECT_EQ(f.stats().recorded_calls, recorded);  // all three replayed
  EXPECT_EQ(f.stats().traces, 1u);
  // The width never changed: it is still exact, so another width records.
  const sf::Tensor w8 = sf::randn({8, 8}), b8 = sf::randn({8}), x8 = sf::randn({4, 8});
  EXPECT_EQ(values(f(x8, w8, b8)), values(block(x8, w8, b8)));
  EXPECT_EQ(f.stats().recorded_calls, recorded + 1);
}

TEST_F(Compile, SizesAreExactWhereTheCodeComputesNumbersFromThem) {
  // The scale depends on the width: recordings at two widths differ in a number, so neither
  // covers the other and a third width records.
  const auto scaled = [](const sf::Tensor& x) {
    return x * static_cast<float>(1.0 / std::sqrt(static_cast<double>(x.size(-1))));
  };
  auto f = sf::compile(scaled);
  for (std::int64_t width : {4, 4, 4, 9, 9, 9}) (void)values(f(sf::randn({2, width})));
  const std::size_t recorded = f.stats().recorded_calls;
  const sf::Tensor x = sf::randn({2, 25});
  EXPECT_EQ(values(f(x)), values(scaled(x)));
  EXPECT_EQ(f.stats().recorded_calls, recorded + 1);

  // A size the arguments' sizes do not give (rows + 1): exact.
  const auto longer = [](const sf::Tensor& x) { return sf::cat({x, x.slice(0, 0, 1)}, 0) * 2.0f; };
  auto g = sf::compile(longer);
  for (std::int64_t rows : {2, 2, 2, 3, 3, 3}) (void)values(g(sf::randn({rows, 7})));
  const sf::Tensor y = sf::randn({5, 7});
  const std::size_t g_recorded = g.stats().recorded_calls;
  EXPECT_EQ(values(g(y)), values(longer(y)));
  EXPECT_EQ(g.stats().recorded_calls, g_recorded + 1);
}

TEST_F(Compile, AReshapeToAProductOfSizesFollowsBoth) {
  // [B, T, C] -> [B * T, C] -> back: B * T follows B and T.
  const auto rows = [](const sf::Tensor& x, const sf::Tensor& w) {
    const std::int64_t b = x.size(0), t = x.size(1), c = x.size(2);
    return (sf::matmul(x.reshape({b * t, c}), w) + 1.0f).reshape({b, t, c});
  };
  auto f = sf::compile(rows);
  const sf::Tensor w = sf::randn({6, 6});
  for (auto [b, t] : {std::pair{2, 4}, {2, 4}, {2, 4}, {3, 5}, {3, 5}})
    (void)values(f(sf::randn({b, t, 6}), w));
  const std::size_t recorded = f.stats().recorded_calls;
  for (auto [b, t] : {std::pair{3, 7}, {5, 2}, {9, 4}}) {
    const sf::Tensor x = sf::randn({b, t, 6});
    EXPECT_EQ(values(f(x, w)), values(rows(x, w))) << b << " x " << t;
  }
  EXPECT_EQ(f.stats().recorded_calls, recorded);
  // B * T equal to another size of the trace (C = 6 = 2 * 3) would merge two sizes: recorded.
  const sf::Tensor x = sf::randn({2, 3, 6});
  EXPECT_EQ(values(f(x, w)), values(rows(x, w)));
  EXPECT_EQ(f.stats().recorded_calls, recorded + 1);
}

TEST_F(Compile, ADynamicSizeEqualToAnotherSizeOfTheTraceRecords) {
  // rows varies, the width 6 is a constant of the trace: rows == 6 would merge two size ids.
  auto f = sf::compile([](const sf::Tensor& x) { return sf::matmul(x, sf::ones({6, 6})) + x; });
  const auto plain = [](const sf::Tensor& x) { return sf::matmul(x, sf::ones({6, 6})) + x; };
  for (std::int64_t rows : {2, 2, 2, 3, 3, 3}) (void)values(f(sf::randn({rows, 6})));
  std::size_t recorded = f.stats().recorded_calls;
  const sf::Tensor x = sf::randn({6, 6});
  EXPECT_EQ(values(f(x)), values(plain(x)));
  EXPECT_EQ(f.stats().recorded_calls, recorded + 1);
  recorded = f.stats().recorded_calls;
  const sf::Tensor z = sf::randn({11, 6});
  EXPECT_EQ(values(f(z)), values(plain(z)));
  EXPECT_EQ(f.stats().recorded_calls, recorded);
}

TEST_F(Compile, DynamicSizesCanBeTurnedOff) {
  auto f =
      sf::compile([](const sf::Tensor& x) { return sf::tanh(x) + 1.0f; }, {.dynamic_sizes = false});
  for (std::int64_t n : {4, 4, 4, 8, 8, 8}) (void)values(f(sf::randn({n})));
  const std::size_t recorded = f.stats().recorded_calls;
  (void)values(f(sf::randn({16})));
  EXPECT_EQ(f.stats().recorded_calls, recorded + 1);
  EXPECT_EQ(f.stats().traces, 3u);
}

TEST_F(Compile, WhatAReplayCouldNotReproduceIsNeverReplayed) {
  // A captured tensor: reassigning it must change the result.
  sf::Tensor weight = sf::full({4}, 1.0f);
  auto captured = sf::compile([&](const sf::Tensor& x) { return x * weight; });
  const sf::Tensor x = sf::randn({4});
  for (int call = 0; call < 4; ++call) {
    weight = sf::full({4}, static_cast<float>(call));
    EXPECT_EQ(values(captured(x)), values(x * weight)) << "call " << call;
  }
  EXPECT_EQ(captured.stats().replayed_calls, 0u);
  EXPECT_FALSE(captured.stats().replays);

  // A value read on the host decides what runs.
  auto branching = sf::compile(
      [](const sf::Tensor& x) { return x.sum().item<float>() > 0 ? x + 1.0f : x - 1.0f; });
  for (float sign : {1.0f, 1.0f, 1.0f, -1.0f, -1.0f}) {
    const sf::Tensor v = sf::full({3}, sign);
    EXPECT_EQ(values(branching(v)), values(sign > 0 ? v + 1.0f : v - 1.0f));
  }
  EXPECT_EQ(branching.stats().replayed_calls, 0u);

  // Random numbers: each call draws new ones.
  auto noisy = sf::compile([](const sf::Tensor& x) { return x + sf::randn({4}); });
  std::vector<std::vector<float>> seen;
  for (int call = 0; call < 4; ++call) seen.push_back(values(noisy(x)));
  for (int call = 1; call < 4; ++call) EXPECT_NE(seen[call], seen[call - 1]);
  EXPECT_EQ(noisy.stats().replayed_calls, 0u);

  // A tensor kept beyond the call.
  sf::Tensor kept;
  auto keeping = sf::compile([&](const sf::Tensor& x) {
    kept = x * 3.0f;
    return x + 1.0f;
  });
  for (int call = 0; call < 4; ++call) {
    const sf::Tensor v = sf::full({2}, static_cast<float>(call));
    EXPECT_EQ(values(keeping(v)), values(v + 1.0f));
    EXPECT_EQ(values(kept), values(v * 3.0f)) << "call " << call;
  }
  EXPECT_EQ(keeping.stats().replayed_calls, 0u);
}

TEST_F(Compile, ResultsOfEveryShape) {
  const sf::Tensor a = sf::randn({3}), b = sf::randn({3});
  auto pair = sf::compile([](const sf::Tensor& x, const sf::Tensor& y) {
    return std::pair<sf::Tensor, sf::Tensor>{x + y, x * y};
  });
  auto tuple = sf::compile([](const sf::Tensor& x, const sf::Tensor& y) {
    sf::Tensor s = x + y;
    return std::tuple<sf::Tensor, sf::Tensor, sf::Tensor>{s, x, s};  // an argument, one twice
  });
  auto list = sf::compile([](const std::vector<sf::Tensor>& xs) {
    std::vector<sf::Tensor> out;
    for (const sf::Tensor& x : xs) out.push_back(sf::relu(x));
    return out;
  });
  int side_effects = 0;
  auto nothing = sf::compile([&](const sf::Tensor& x) {
    ++side_effects;
    (void)(x + 1.0f);
  });
  for (int call = 0; call < 4; ++call) {
    const auto [s, p] = pair(a, b);
    EXPECT_EQ(values(s), values(a + b));
    EXPECT_EQ(values(p), values(a * b));
    const auto [t0, t1, t2] = tuple(a, b);
    EXPECT_EQ(values(t0), values(a + b));
    EXPECT_EQ(t1.node(), a.node());   // the argument itself
    EXPECT_EQ(t0.node(), t2.node());  // one tensor, returned twice
    const std::vector<sf::Tensor> r = list(std::vector<sf::Tensor>{a, b, a});
    ASSERT_EQ(r.size(), 3u);
    EXPECT_EQ(values(r[1]), values(sf::relu(b)));
    nothing(a);
  }
  EXPECT_GE(pair.stats().replayed_calls, 2u);
  EXPECT_GE(tuple.stats().replayed_calls, 2u);
  EXPECT_GE(list.stats().replayed_calls, 2u);
  // A replay does not run the code: a function whose effect is in C++ gets it only on recording.
  EXPECT_EQ(static_cast<std::size_t>(side_effects), nothing.stats().recorded_calls);
}

TEST_F(Compile, ACompiledCallInsideAnotherIsPartOfItsTrace) {
  auto inner = sf::compile([](const sf::Tensor& x) { return sf::sigmoid(x) * 2.0f; });
  auto outer = sf::compile([&](const sf::Tensor& x) { return inner(x + 1.0f) - x; });
  for (int call = 0; call < 5; ++call) {
    const sf::Tensor x = sf::randn({6});
    EXPECT_EQ(values(outer(x)), values(sf::sigmoid(x + 1.0f) * 2.0f - x));
  }
  EXPECT_GE(outer.stats().replayed_calls, 3u);
  EXPECT_EQ(inner.stats().replayed_calls, 0u);  // it only ran inside outer's recordings
}

TEST_F(Compile, ErrorsNameTheOpAndTheFunctionStillWorks) {
  auto f = sf::compile([](const sf::Tensor& a, const sf::Tensor& b) { return a + b; });
  expect_error<sf::ShapeError>([&] { (void)f(sf::randn({2}), sf::randn({3})); },
                               {"add", "broadcast"});
  const sf::Tensor a = sf::randn({2}), b = sf::randn({2});
  for (int call = 0; call < 4; ++call) EXPECT_EQ(values(f(a, b)), values(a + b));
  EXPECT_GE(f.stats().replayed_calls, 1u);
  expect_error<sf::Error>([&] { (void)f(sf::Tensor(), b); }, {"undefined"});

  // A failure while a replayed op runs is kept with its result and names the op, as without
  // compile: index_select with an index out of range.
  auto pick = sf::compile(
      [](const sf::Tensor& x, const sf::Tensor& i) { return sf::index_select(x, 0, i) + 1.0f; });
  const sf::Tensor x = sf::randn({4});
  const sf::Tensor good = sf::from_vector<std::int64_t>({0, 3});
  for (int call = 0; call < 3; ++call)
    EXPECT_EQ(values(pick(x, good)), values(sf::index_select(x, 0, good) + 1.0f));
  const std::size_t replayed = pick.stats().replayed_calls;
  const sf::Tensor bad = sf::from_vector<std::int64_t>({0, 9});
  const sf::Tensor y = pick(x, bad);
  EXPECT_EQ(pick.stats().replayed_calls, replayed + 1);
  expect_error<sf::Error>([&] { (void)values(y); }, {"index_select"});
}

TEST_F(Compile, WithFusionOffTheFunctionRunsAsPlainCode) {
  sf::Config c = sf::config();
  c.fusion = false;
  sf::set_config(c);
  auto f = sf::compile([](const sf::Tensor& x) { return x * x; });
  const sf::Tensor x = sf::randn({5});
  for (int call = 0; call < 4; ++call) EXPECT_EQ(values(f(x)), values(x * x));
  EXPECT_EQ(f.stats().replayed_calls, 0u);
  EXPECT_EQ(f.stats().traces, 0u);
}

TEST_F(Compile, ArgumentsMadeOnAnotherThreadAndCallsFromSeveralThreads) {
  auto f = sf::compile(block);
  const sf::Tensor w = sf::randn({8, 8}), bias = sf::randn({8});
  for (int call = 0; call < 3; ++call) (void)values(f(sf::randn({2, 8}), w, bias));
  // Made lazily on another thread's stream, read here: that stream is drained first.
  sf::Tensor x;
  std::thread([&] { x = sf::tanh(sf::randn({2, 8}) * 3.0f); }).join();
  EXPECT_EQ(values(f(x, w, bias)), values(block(x, w, bias)));

  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int call = 0; call < 20; ++call) {
        const sf::Tensor v = sf::randn({2, 8});
        if (values(f(v, w, bias)) != values(block(v, w, bias))) ++wrong;
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST_F(Compile, ACallThatThrowsLeavesNothingRecordingBehind) {
  auto f = sf::compile([](const sf::Tensor& x) {
    sf::Tensor y = x + 1.0f;
    if (x.size(0) == 3) throw std::runtime_error("three");
    return y;
  });
  EXPECT_THROW((void)f(sf::randn({3})), std::runtime_error);
  // The throwing call's op still runs; the next calls record and replay as usual.
  const sf::Tensor x = sf::randn({4});
  for (int call = 0; call < 4; ++call) EXPECT_EQ(values(f(x)), values(x + 1.0f));
  EXPECT_GE(f.stats().replayed_calls, 1u);
}

}  // namespace
