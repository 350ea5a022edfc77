// Every API op on cuda:0 gives the CPU's values (bitwise: the kernels compute with the CPU's
// functions; see tests/differential/cuda_differential_test.cpp), with fusion off and on; copies
// between devices both ways; memory statistics; and tensors shared between threads' streams.
// Runs on cuda:0 and skips without one; CI runs it on the emulated GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "streamfuse/streamfuse.h"

namespace sf = streamfuse;

namespace {

const sf::Device kGpu = sf::Device::cuda(0);
const sf::Device kCpu = sf::Device::cpu();

class CudaDevice : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    try {
      sf::synchronize(kGpu);
    } catch (const sf::DeviceError& e) {
      GTEST_SKIP() << e.what();
    }
    saved_ = sf::config();
    sf::Config c = saved_;
    c.fusion = GetParam();
    sf::set_config(c);
  }
  void TearDown() override {
    if (!IsSkipped()) sf::set_config(saved_);
  }

  // `f` of tensors on one device: the same values on both.
  template <class T, class F>
  void same(F f, const char* what) {
    const std::vector<T> cpu = f(kCpu).template to_vector<T>();
    const std::vector<T> gpu = f(kGpu).template to_vector<T>();
    EXPECT_EQ(cpu, gpu) << what;
  }

  // `f` on both devices, within `tolerance` relative to the largest magnitude: for products,
  // which cuBLAS sums in another order than oneDNN.
  template <class F>
  void near(F f, double tolerance, const char* what) {
    const std::vector<float> cpu = f(kCpu).template to_vector<float>();
    const std::vector<float> gpu = f(kGpu).template to_vector<float>();
    ASSERT_EQ(cpu.size(), gpu.size()) << what;
    double scale = 1;
    for (float x : cpu) scale = std::max(scale, static_cast<double>(std::abs(x)));
    for (std::size_t i = 0; i < cpu.size(); ++i)
      ASSERT_NEAR(cpu[i], gpu[i], tolerance * scale) << what << ", element " << i;
  }

  sf::Config saved_;
};

sf::Tensor input(sf::Device d, sf::Shape s, float scale = 1.0f) {
  std::vector<float> v(static_cast<std::size_t>(s.numel()));
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = scale * static_cast<float>((static_cast<int>(i * 7919 % 113) - 56)) / 17.0f;
  return sf::from_vector(v, s, d);
}

TEST_P(CudaDevice, ElementwiseOpsOfEveryKindAndDtype) {
  same<float>([](sf::Device d) { return sf::nn::gelu(input(d, {33, 65})); }, "gelu");
  same<float>([](sf::Device d) { return sf::exp(input(d, {7, 9}, 0.3f)) / 3.0f - 1.5f; }, "exp");
  same<float>(
      [](sf::Device d) {
        return sf::pow(sf::abs(input(d, {5, 40})), input(d, {40}, 0.1f));
      },
      "pow, broadcast");
  same<float>(
      [](sf::Device d) {
        auto x = input(d, {6, 10});
        return sf::where(x > 0.5f, sf::sin(x), sf::tanh(x) * sf::sigmoid(x));
      },
      "where");
  same<sf::Half>([](sf::Device d) { return (input(d, {1000}) * 3.0f).to(sf::kF16) + 1; }, "f16");
  same<sf::BFloat16>([](sf::Device d) { return sf::erf(input(d, {257}).to(sf::kBF16)); }, "bf16");
  same<std::int32_t>(
      [](sf::Device d) {
        return sf::maximum(input(d, {4, 50}, 40.0f).to(sf::kI32) * 7 - 3, 5);
      },
      "i32");
  same<std::int64_t>([](sf::Device d) { return sf::arange(-20, 300, 3, sf::kI64, d) * 1000003; },
                     "i64");
  same<bool>(
      [](sf::Device d) {
        auto x = input(d, {30});
        return sf::logical_or(x > 0, sf::logical_not(x < -1.0f));
      },
      "bool");
  same<float>(
      [](sf::Device d) {
        return sf::transpose(input(d, {17, 31}), 0, 1) * 2.0f;
      },
      "strided input");
}

// sf::compile on the GPU: the recorded calls and the replayed ones give the CPU's values, at
// the recorded size and at another size of the dimension that changed between recordings.
TEST_P(CudaDevice, CompiledFunctionsReplayOnTheGpu) {
  const auto norm = [](const sf::Tensor& x, const sf::Tensor& w) {
    sf::Tensor centered = x - x.mean(-1, true);
    sf::Tensor scaled = centered * sf::rsqrt((centered * centered).mean(-1, true) + 1e-5f);
    return sf::nn::softmax(scaled * w, -1);
  };
  auto compiled = sf::compile(norm, {.name = "gpu norm"});
  std::uint64_t explored_by_first_call = 0;
  for (std::int64_t rows : {3, 3, 3, 5, 5, 9, 2}) {
    const std::vector<float> cpu =
        norm(input(kCpu, {rows, 40}), input(kCpu, {40}, 0.5f)).to_vector<float>();
    const sf::Tensor x = input(kGpu, {rows, 40}), w = input(kGpu, {40}, 0.5f);
    const bool first = compiled.stats().recorded_calls == 0;
    const std::uint64_t explored = sf::fusion_stats(kGpu).plans_explored;
    EXPECT_EQ(compiled(x, w).to_vector<float>(), cpu) << rows << " rows";
    if (first) explored_by_first_call = sf::fusion_stats(kGpu).plans_explored - explored;
  }
  // With fusion on: recorded are a first call that explores (when the cache directory does not
  // hold the plans already), the one that keeps its trace, and another size; the rest replay.
  if (GetParam()) {
    EXPECT_EQ(compiled.stats().replayed_calls, explored_by_first_call > 0 ? 4u : 5u);
  }
}

TEST_P(CudaDevice, CreationOps) {
  same<float>([](sf::Device d) { return sf::full({3, 5}, 2.5, sf::kF32, d); }, "full");
  same<sf::Half>([](sf::Device d) { return sf::ones({9}, sf::kF16, d); }, "ones f16");
  same<float>([](sf::Device d) { return sf::arange(0.5, 10.0, 0.25, sf::kF32, d); }, "arange");
  same<std::int32_t>([](sf::Device d) { return sf::arange(100, sf::kI32, d); }, "arange i32");
  for (sf::DType t : {sf::kF32, sf::kF16, sf::kBF16}) {
    sf::manual_seed(123);
    const auto cpu_u = sf::rand({1001}, t, kCpu).to(sf::kF32).to_vector<float>();
    const auto cpu_n = sf::randn({37, 3}, t, kCpu).to(sf::kF32).to_vector<float>();
    sf::manual_seed(123);
    EXPECT_EQ(cpu_u, sf::rand({1001}, t, kGpu).to(sf::kF32).to_vector<float>()) << "rand";
    EXPECT_EQ(cpu_n, sf::randn({37, 3}, t, kGpu).to(sf::kF32).to_vector<float>()) << "randn";
  }
}

TEST_P(CudaDevice, ReductionsOverEveryAxisAndAll) {
  for (int axis : {0, 1, 2}) {
    same<float>([&](sf::Device d) { return sf::sum(input(d, {6, 700, 5}), axis); }, "sum");
    same<float>([&](sf::Device d) { return sf::mean(input(d, {6, 70, 5}), axis, true); }, "mean");
    same<float>([&](sf::Device d) { return sf::max(input(d, {6, 70, 5}), axis); }, "max");
    same<float>([&](sf::Device d) { return sf::min(input(d, {6, 70, 5}), axis); }, "min");
    same<std::int64_t>(
        [&](sf::Device d) {
          return sf::argmax(input(d, {6, 70, 5}), axis);
        },
        "argmax");
  }
  // Long rows take the parts kernels (and their second pass); many outputs the row kernel.
  same<float>([](sf::Device d) { return sf::sum(input(d, {3, 200000})); }, "sum all, long");
  same<float>([](sf::Device d) { return sf::sum(input(d, {2, 100000}), 1); }, "sum rows, long");
  same<std::int64_t>([](sf::Device d) { return sf::argmax(input(d, {300001})); }, "argmax long");
  same<float>([](sf::Device d) { return sf::max(input(d, {5000, 3}), 1); }, "max, many rows");
  same<std::int64_t>(
      [](sf::Device d) {
        return sf::sum(input(d, {50, 30}, 20.0f).to(sf::kI32), 0);
      },
      "sum i32");
  same<float>(
      [](sf::Device d) {
        return sf::mean(input(d, {50, 30}, 20.0f).to(sf::kI64));
      },
      "mean i64");
  same<bool>([](sf::Device d) { return sf::max(input(d, {8, 9}) > 1.0f, 1); }, "max bool");
  same<sf::Half>(
      [](sf::Device d) {
        return sf::sum(input(d, {4, 3000}).to(sf::kF16), 1);
      },
      "sum f16");
  same<float>([](sf::Device d) { return sf::nn::softmax(input(d, {7, 129})); }, "softmax");
  same<float>(
      [](sf::Device d) {
        return sf::nn::layer_norm(input(d, {5, 64}), {64});
      },
      "layer_norm");
}

// Values whose double sums depend on the order they are added in: magnitudes from 2^-30 to 2^30
// (a double holds 53 bits, so small terms are lost or kept depending on what they meet first),
// and at `plant` positions 1e30, then -1e30, then 1 (the sum is 0 or 1 depending on whether the
// two large terms meet before the 1 does).
sf::Tensor order_sensitive(sf::Device d, sf::Shape s, std::vector<std::int64_t> plant = {}) {
  std::vector<float> v(static_cast<std::size_t>(s.numel()));
  std::uint64_t x = 0x9e3779b97f4a7c15ull;
  for (float& e : v) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    const int exponent = static_cast<int>(x % 61) - 30;
    e = std::ldexp(static_cast<float>((x >> 8) % 1000) / 1000.0f + 0.5f, exponent) *
        ((x >> 40) & 1 ? 1.0f : -1.0f);
  }
  for (std::int64_t at : plant) {
    v[static_cast<std::size_t>(at)] = 1e30f;
    v[static_cast<std::size_t>(at + 1)] = -1e30f;
    v[static_cast<std::size_t>(at + 2)] = 1.0f;
  }
  return sf::from_vector(v, s, d);
}

// Every reduction folds in the order of core/reduce_math.h on both devices: blocks of 65536
// elements merged in order, 16 lanes in a contiguous run, runs of a layout whose dimensions do
// not merge one after the other. With order-sensitive values any other order (one by one, a
// tree) gives other bits.
TEST_P(CudaDevice, ReductionsFoldInTheCpusOrderBitForBit) {
  // The lanes of a contiguous run: 1e30 and -1e30 meet in lane 0, the 1 survives in lane 1.
  const auto lanes = [](sf::Device d) {
    std::vector<float> v(64, 0.0f);
    v[0] = 1e30f, v[1] = 1.0f, v[16] = -1e30f;
    return sf::sum(sf::from_vector(v, sf::Shape{64}, d));
  };
  EXPECT_EQ(lanes(kCpu).item<float>(), 1.0f) << "lanes, on the CPU";
  same<float>(lanes, "lanes");
  // Blocks: 1e30 ends block 0, -1e30 and 1 begin block 1 (1 is lost in it, the total is 0), in
  // a column two elements apart.
  const auto blocks = [](sf::Device d) {
    return sf::sum(order_sensitive(d, {2, 200000}, {65535}).transpose(0, 1).contiguous(), 0);
  };
  same<float>(blocks, "blocks of strided columns");
  same<float>(
      [](sf::Device d) {
        return sf::sum(order_sensitive(d, {2, 200000}, {65535}), 1);
      },
      "contiguous rows of several blocks (lanes folded in parallel)");
  same<float>([](sf::Device d) { return sf::sum(order_sensitive(d, {300000}, {131071})); },
              "all, one contiguous run");
  same<float>(
      [](sf::Device d) {
        return sf::sum(order_sensitive(d, {7, 150000}, {65535}), 1);
      },
      "contiguous rows, few outputs");
  same<float>(
      [](sf::Device d) {
        return sf::sum(order_sensitive(d, {7, 150000}, {65535}).transpose(0, 1).contiguous(), 0);
      },
      "strided columns, few outputs");
  same<float>(
      [](sf::Device d) {
        return sf::sum(order_sensitive(d, {5000, 300}, {0, 3000}), 1);
      },
      "many outputs");
  same<float>(
      [](sf::Device d) {
        return sf::sum(order_sensitive(d, {1000, 128}, {0, 65536}).slice(1, 0, 100));
      },
      "all of a slice: contiguous runs of 100, two blocks");
  same<float>(
      [](sf::Device d) {
        return sf::sum(order_sensitive(d, {300, 700}, {0}).transpose(0, 1));
      },
      "all of a transpose: strided runs");
  same<float>(
      [](sf::Device d) {
        return sf::mean(order_sensitive(d, {1, 90000}).expand({3, 90000}), 0);
      },
      "mean over a broadcast axis");
  same<float>(
      [](sf::Device d) {
        return sf::sum(order_sensitive(d, {1, 90000}, {65535}).expand({3, 90000}));
      },
      "all of a broadcast: a run per row");
  same<sf::Half>(
      [](sf::Device d) {
        return sf::mean(order_sensitive(d, {3, 140000}).to(sf::kF16), 1);
      },
      "mean f16");
  same<float>([](sf::Device d) { return sf::max(order_sensitive(d, {140000, 3}), 0); }, "max");
  same<float>([](sf::Device d) { return sf::min(order_sensitive(d, {3, 140000}), 1); }, "min");
  // Ties and NaN: the first index of the largest, NaN counting as largest.
  const auto ties = [](sf::Device d, float special) {
    std::vector<float> v(200000, 0.0f);
    for (std::size_t i : {70000u, 5000u, 140000u}) v[i] = special;
    return sf::from_vector(v, sf::Shape{200000}, d);
  };
  for (float special : {2.0f, std::nanf("")}) {
    same<std::int64_t>([&](sf::Device d) { return sf::argmax(ties(d, special)); }, "argmax");
    same<std::int64_t>(
        [&](sf::Device d) {
          return sf::argmax(ties(d, special).reshape({2, 100000}).transpose(0, 1), 0);
        },
        "argmax of strided columns");
  }
}

TEST_P(CudaDevice, MatmulOfEveryDtypeAndLayout) {
  near([](sf::Device d) { return sf::matmul(input(d, {33, 17}), input(d, {17, 9})); }, 1e-6, "2-D");
  near(
      [](sf::Device d) {
        return sf::matmul(input(d, {3, 1, 8, 5}), sf::transpose(input(d, {4, 6, 5}), 1, 2));
      },
      1e-6, "batched, broadcast, transposed");
  near([](sf::Device d) { return sf::matmul(input(d, {17}), input(d, {17, 4})); }, 1e-6, "1-D");
  same<float>([](sf::Device d) { return sf::matmul(input(d, {4, 0}), input(d, {0, 3})); }, "k=0");
  near(
      [](sf::Device d) {
        return sf::matmul(input(d, {6, 8}).slice(1, 0, 8, 2), input(d, {4, 5}));
      },
      1e-6, "strided columns");
  for (sf::DType t : {sf::kF16, sf::kBF16})
    near(
        [&](sf::Device d) {
          return sf::matmul(input(d, {9, 32}).to(t), input(d, {32, 7}).to(t)).to(sf::kF32);
        },
        1e-2, "16-bit");
  same<std::int32_t>(
      [](sf::Device d) {
        return sf::matmul(input(d, {2, 5, 6}, 9.0f).to(sf::kI32),
                          input(d, {6, 3}, 9.0f).to(sf::kI32));
      },
      "i32");
  same<std::int64_t>(
      [](sf::Device d) {
        return sf::matmul(input(d, {5, 6}, 9.0f).to(sf::kI64), input(d, {6}, 9.0f).to(sf::kI64));
      },
      "i64 matrix-vector");
}

TEST_P(CudaDevice, NnOpsClampAndPrinting) {
  same<float>([](sf::Device d) { return sf::nn::silu(input(d, {3, 70})); }, "silu");
  same<float>([](sf::Device d) { return sf::nn::log_softmax(input(d, {7, 129})); }, "log_softmax");
  same<float>(
      [](sf::Device d) {
        return sf::nn::rms_norm(input(d, {5, 64}), {64}, sf::full({64}, 0.5f, {}, d));
      },
      "rms_norm");
  same<float>([](sf::Device d) { return sf::clamp(input(d, {50}), -0.5, 0.75); }, "clamp");
  same<float>(
      [](sf::Device d) {
        return sf::clamp(input(d, {4, 5}), input(d, {5}, -1.0f), input(d, {4, 1}, 2.0f));
      },
      "clamp by tensors");
  same<float>(
      [](sf::Device d) {
        return sf::flatten(sf::unsqueeze(sf::squeeze(input(d, {3, 1, 4}), 1), 0));
      },
      "squeeze, unsqueeze, flatten");
  same<float>([](sf::Device d) { return sf::rand_like(input(d, {8})) * 0.0f; }, "rand_like");
  std::ostringstream cpu, gpu;
  cpu << sf::exp(input(kCpu, {3, 4}));
  gpu << sf::exp(input(kGpu, {3, 4}));
  // PyTorch's form: the same values, the device named before the closing parenthesis.
  const std::string want = cpu.str().substr(0, cpu.str().size() - 1) + ", device=cuda:0)";
  EXPECT_EQ(gpu.str(), want) << "printing reads the GPU's values";
}

TEST_P(CudaDevice, MovementOps) {
  same<float>(
      [](sf::Device d) {
        return sf::transpose(input(d, {5, 6}), 0, 1).reshape({30});
      },
      "reshape of a transpose (copies)");
  same<float>([](sf::Device d) { return input(d, {3, 1}).expand({3, 4}).contiguous(); }, "expand");
  same<float>([](sf::Device d) { return input(d, {9, 4}).slice(0, 1, 9, 3); }, "slice");
  same<float>(
      [](sf::Device d) {
        return sf::cat({input(d, {2, 3}), sf::transpose(input(d, {3, 4}), 0, 1)}, 0);
      },
      "cat");
  same<sf::Half>(
      [](sf::Device d) {
        return sf::cat({input(d, {2, 3}).to(sf::kF16), input(d, {2, 5}).to(sf::kF16)}, 1);
      },
      "cat f16 along the inner axis");
}

TEST_P(CudaDevice, IndexOps) {
  const auto ids = [](sf::Device d, sf::Shape s, std::int64_t below, sf::DType dtype) {
    std::vector<std::int64_t> v(static_cast<std::size_t>(s.numel()));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int64_t>(i * 5 + 3) % below;
    return sf::from_vector(v, s, d).to(dtype);
  };
  same<float>(
      [&](sf::Device d) {
        return sf::embedding(input(d, {11, 6}), ids(d, {2, 3}, 11, sf::kI32));
      },
      "embedding, i32 ids");
  same<float>(
      [&](sf::Device d) {
        return sf::index_select(sf::transpose(input(d, {5, 7}), 0, 1), 1, ids(d, {4}, 5, sf::kI64));
      },
      "index_select of a transposed x along its inner axis");
  same<sf::Half>(
      [&](sf::Device d) {
        return sf::index_select(input(d, {3, 4, 2}).to(sf::kF16), 1, ids(d, {3}, 4, sf::kI64));
      },
      "index_select f16 along a middle axis");
  same<std::int64_t>(
      [&](sf::Device d) {
        return sf::gather(ids(d, {4, 6}, 100, sf::kI64), 1, ids(d, {4, 3}, 6, sf::kI32));
      },
      "gather i64 along the inner axis");
  same<float>(
      [&](sf::Device d) {
        return sf::gather(input(d, {5, 3, 2}), 0, ids(d, {2, 3, 1}, 5, sf::kI64));
      },
      "gather along the outer axis, index smaller than x");
  // An index out of range: the CPU's error, naming the same (first) index.
  std::string messages[2];
  for (int k = 0; k < 2; ++k) {
    const sf::Device d = k ? kGpu : kCpu;
    try {
      sf::embedding(input(d, {4, 2}), sf::from_vector(std::vector<std::int64_t>{1, 9, 7}, {3}, d))
          .to(kCpu)
          .to_vector<float>();
    } catch (const sf::Error& e) {
      messages[k] = e.what();
    }
  }
  EXPECT_NE(messages[0].find("index 9 at [1]"), std::string::npos) << messages[0];
  EXPECT_NE(messages[1].find("index 9 at [1]"), std::string::npos) << messages[1];
}

TEST_P(CudaDevice, SliceUpdate) {
  same<float>(
      [](sf::Device d) {
        return sf::slice_update(input(d, {3, 5, 2}), 1, 2, input(d, {3, 2, 2}, 3.0f).to(sf::kF16));
      },
      "slice_update, src converted");
  same<float>(
      [](sf::Device d) {
        sf::Tensor kv = sf::zeros({2, 6, 3}, sf::kF32, d);
        for (int t = 0; t < 6; ++t)
          kv = sf::slice_update(std::move(kv), 1, t, input(d, {2, 1, 3}, static_cast<float>(t)));
        return kv;
      },
      "a cache updated in place, row by row");
  same<float>(
      [](sf::Device d) {
        return sf::index_put(input(d, {6, 4}), 0,
                             sf::from_vector(std::vector<std::int64_t>{5, 1, 5}, {3}, d),
                             input(d, {3, 4}, 2.0f));
      },
      "index_put, a repeated index");
}

TEST_P(CudaDevice, Scans) {
  same<float>(
      [](sf::Device d) {
        return sf::cumsum(input(d, {3, 40, 2}, 9.0f), 1);
      },
      "cumsum f32 along a middle axis (double sums)");
  same<sf::BFloat16>([](sf::Device d) { return sf::cumsum(input(d, {70}).to(sf::kBF16), 0); },
                     "cumsum bf16");
  same<std::int64_t>(
      [](sf::Device d) {
        return sf::cumsum(input(d, {5, 6}).to(sf::kI32), -1);
      },
      "cumsum i32 into i64");
  same<std::int64_t>(
      [](sf::Device d) {
        // Many ties (the input repeats every 113 elements), NaN and signed zeros.
        const sf::Tensor x = sf::cat({input(d, {4, 300}), sf::full({4, 2}, NAN, sf::kF32, d),
                                      sf::full({4, 1}, -0.0f, sf::kF32, d)},
                                     1);
        return sf::argsort(x, -1, true);
      },
      "argsort descending, stable");
  same<std::int64_t>(
      [](sf::Device d) {
        return sf::argsort(input(d, {33, 3}).to(sf::kI64), 0);
      },
      "argsort i64 along the outer axis");
  same<float>([](sf::Device d) { return sf::topk(input(d, {2, 500}), 5).values; }, "topk");
}

TEST_P(CudaDevice, Scatters) {
  auto index = [](sf::Device d) {
    std::vector<std::int64_t> v(60);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int64_t>(i * 7 % 5);
    return sf::from_vector(v, {3, 4, 5}, d);
  };
  same<float>(
      [&](sf::Device d) {
        return sf::scatter(input(d, {4, 5, 6}), 1, index(d), input(d, {3, 6, 5}, 2.0f));
      },
      "scatter f32 along the middle axis, repeated positions");
  same<float>(
      [&](sf::Device d) {
        return sf::scatter_add(input(d, {3, 5, 6}, 1e4f), 2, index(d).to(sf::kI32),
                               input(d, {3, 4, 5}));
      },
      "scatter_add f32 (sums in order)");
  same<sf::Half>(
      [&](sf::Device d) {
        return sf::scatter_add(input(d, {5, 4, 5}).to(sf::kF16), 0, index(d),
                               input(d, {3, 4, 5}).to(sf::kF16));
      },
      "scatter_add f16 rounded at each step");
  same<std::int32_t>(
      [&](sf::Device d) {
        // x moved in: written in place (a strided x is copied first).
        sf::Tensor x = sf::permute(input(d, {5, 4, 3}, 100.0f).to(sf::kI32), {2, 1, 0});
        return sf::scatter_add(std::move(x), 2, index(d), input(d, {3, 4, 5}, 50.0f).to(sf::kI32));
      },
      "scatter_add i32 into a moved, strided x");
  const sf::Tensor bad = sf::from_vector(std::vector<std::int64_t>{0, 9}, {1, 2}, kGpu);
  try {
    sf::scatter(sf::zeros({2, 3}, sf::kF32, kGpu), 1, bad, 1.0f).to_vector<float>();
    ADD_FAILURE() << "no error for an index out of range";
  } catch (const sf::Error& e) {
    EXPECT_NE(std::string(e.what()).find("index 9 at [0, 1]"), std::string::npos) << e.what();
  }
}

TEST_P(CudaDevice, ConvolutionsAndPools) {
  // conv2d: a direct loop on the device, oneDNN on the CPU: within a bound.
  near(
      [](sf::Device d) {
        return sf::nn::conv2d(
            input(d, {2, 6, 11, 9}), input(d, {4, 3, 3, 2}, 0.3f), input(d, {4}),
            {.stride = {2, 1}, .padding = {1, 1}, .dilation = {1, 2}, .groups = 2});
      },
      1e-5, "conv2d f32 with groups, stride, padding and dilation");
  near(
      [](sf::Device d) {
        return sf::nn::conv2d(
            input(d, {2, 5, 9, 8}), input(d, {5, 1, 3, 3}, 0.3f), std::nullopt,
            {.stride = {2, 1}, .padding = {1, 2}, .dilation = {1, 2}, .groups = 5});
      },
      1e-5, "depthwise conv2d f32");
  near(
      [](sf::Device d) {
        return sf::nn::conv1d(input(d, {3, 17}).to(sf::kBF16), input(d, {5, 3, 4}).to(sf::kBF16))
            .to(sf::kF32);
      },
      1e-2, "conv1d bf16, unbatched");
  // Pools: the CPU's arithmetic, so its bits.
  same<float>(
      [](sf::Device d) {
        const sf::Tensor y = sf::nn::max_pool2d(
            sf::cat({input(d, {2, 3, 9, 10}), sf::full({2, 3, 1, 10}, NAN, sf::kF32, d)}, 2),
            {3, 3}, {.stride = {2, 2}, .padding = {1, 1}, .dilation = {1, 2}, .ceil_mode = true});
        return sf::where(y != y, sf::full_like(y, 1234.5f), y);  // NaN compares unequal
      },
      "max_pool2d with NaN, dilation and ceil_mode");
  same<float>(
      [](sf::Device d) {
        return sf::nn::avg_pool2d(input(d, {2, 3, 10, 7}, 3.0f), {3, 2},
                                  {.stride = {2, 2}, .padding = {1, 1}, .ceil_mode = true});
      },
      "avg_pool2d counting padding, ceil_mode");
  same<sf::Half>(
      [](sf::Device d) {
        return sf::nn::avg_pool2d(
            input(d, {1, 2, 8, 8}).to(sf::kF16), {3, 3},
            {.stride = {1, 1}, .padding = {1, 1}, .count_include_pad = false});
      },
      "avg_pool2d f16 not counting padding");
}

// i8 and u8 (values in int registers, wrapped to 8 bits after every op): arithmetic, scalars,
// casts from floats with NaN, infinities and out-of-range values, reductions into i64, scans,
// products and dequantization, as the CPU computes them.
TEST_P(CudaDevice, EightBitIntegers) {
  const auto i8 = [](sf::Device d, sf::Shape s) { return (input(d, s, 900.0f)).to(sf::kI8); };
  const auto u8 = [](sf::Device d, sf::Shape s) { return (input(d, s, 900.0f)).to(sf::kU8); };
  same<std::int8_t>(
      [&](sf::Device d) {
        const sf::Tensor a = i8(d, {6, 50}), b = i8(d, {50});
        return sf::where(a + b > 0, a * b - 7, sf::abs(sf::neg(a)) + sf::pow(b, 3));
      },
      "i8 arithmetic");
  same<std::uint8_t>(
      [&](sf::Device d) {
        const sf::Tensor x = u8(d, {3, 70});
        return sf::maximum((x + 300) * 3, x - u8(d, {70})) + true;
      },
      "u8 arithmetic and scalars");
  same<std::int32_t>([&](sf::Device d) { return u8(d, {40}) + i8(d, {40}); }, "u8 + i8 is i32");
  same<std::uint8_t>(
      [](sf::Device d) {
        const sf::Tensor f =
            sf::cat({input(d, {60}, 2e3f), sf::full({1}, NAN, sf::kF32, d),
                     sf::full({1}, INFINITY, sf::kF32, d), sf::full({1}, -3e10f, sf::kF32, d)},
                    0);
        return f.to(sf::kU8);
      },
      "f32 to u8");
  same<std::int8_t>([](sf::Device d) { return (input(d, {200}, 1e3f).to(sf::kF16)).to(sf::kI8); },
                    "f16 to i8");
  same<float>(
      [&](sf::Device d) {
        return i8(d, {64, 33}).to(sf::kF32) * input(d, {64, 1});
      },
      "dequantize");
  same<std::int64_t>([&](sf::Device d) { return sf::sum(u8(d, {5, 3000}) * 2, 1); }, "sum u8");
  same<float>([&](sf::Device d) { return sf::mean(i8(d, {7, 90}), 0); }, "mean i8");
  same<std::int8_t>([&](sf::Device d) { return sf::max(i8(d, {7, 90}) * 3, 1); }, "max i8");
  same<std::int64_t>([&](sf::Device d) { return sf::argmax(u8(d, {70000})); }, "argmax u8");
  same<std::int64_t>([&](sf::Device d) { return sf::cumsum(i8(d, {4, 90}), 1); }, "cumsum i8");
  same<std::int64_t>([&](sf::Device d) { return sf::argsort(i8(d, {90}), 0); }, "argsort i8");
  same<std::int8_t>(
      [&](sf::Device d) {
        return sf::matmul(i8(d, {5, 40}), i8(d, {40, 3}));
      },
      "matmul i8");
  same<std::uint8_t>(
      [&](sf::Device d) {
        return sf::matmul(u8(d, {2, 9, 40}), u8(d, {40, 3}));
      },
      "matmul u8");
  same<std::uint8_t>([](sf::Device d) { return sf::arange(250, 262, 1, sf::kU8, d); }, "arange");
  same<std::int8_t>([](sf::Device d) { return sf::full({5}, 300.5, sf::kI8, d); }, "full i8");
}

// f64: exact ops (arithmetic, sqrt, casts, sums in the CPU's order, products' exact terms) give
// the CPU's bits; the math functions are CUDA's double ones on a GPU (libm's on the emulated
// one), within 2 ulps of the CPU's.
TEST_P(CudaDevice, DoublePrecision) {
  const auto f64 = [](sf::Device d, sf::Shape s) { return input(d, s).to(sf::kF64) / 3.0; };
  same<double>(
      [&](sf::Device d) {
        const sf::Tensor x = f64(d, {6, 50}), y = f64(d, {50});
        return sf::where(x > y, x * y - 0.1, sf::sqrt(sf::abs(x)) / (y + 7.0));
      },
      "arithmetic");
  same<double>([&](sf::Device d) { return sf::maximum(f64(d, {40}), f64(d, {40}) * -1.0); },
               "maximum");
  same<float>([&](sf::Device d) { return (f64(d, {90}) * 1e-3).to(sf::kF32); }, "to f32");
  same<std::int32_t>([&](sf::Device d) { return (f64(d, {90}) * 1e9).to(sf::kI32); }, "to i32");
  same<double>([&](sf::Device d) { return input(d, {70}).to(sf::kF64) * 0.1; }, "from f32");
  same<double>([&](sf::Device d) { return sf::sum(f64(d, {5, 3000}), 1); }, "sum");
  same<double>([&](sf::Device d) { return sf::mean(f64(d, {7, 90}), 0); }, "mean");
  same<std::int64_t>([&](sf::Device d) { return sf::argmax(f64(d, {70000})); }, "argmax");
  same<double>([&](sf::Device d) { return sf::max(f64(d, {7, 90}), 1); }, "max");
  same<double>([&](sf::Device d) { return sf::cumsum(f64(d, {4, 90}), 1); }, "cumsum");
  same<std::int64_t>([&](sf::Device d) { return sf::argsort(f64(d, {90}), 0); }, "argsort");
  same<double>([](sf::Device d) { return sf::arange(0.5, 10.0, 0.1, sf::kF64, d); }, "arange");
  same<double>([](sf::Device d) { return sf::full({5}, 0.1, sf::kF64, d); }, "full");
  sf::manual_seed(9);
  const auto cpu_n = sf::randn({37, 3}, sf::kF64, kCpu).to_vector<double>();
  sf::manual_seed(9);
  EXPECT_EQ(cpu_n, sf::randn({37, 3}, sf::kF64, kGpu).to_vector<double>()) << "randn";
  const auto close = [&](auto f, double tolerance, const char* what) {
    const std::vector<double> cpu = f(kCpu).template to_vector<double>();
    const std::vector<double> gpu = f(kGpu).template to_vector<double>();
    ASSERT_EQ(cpu.size(), gpu.size()) << what;
    for (std::size_t i = 0; i < cpu.size(); ++i)
      ASSERT_NEAR(cpu[i], gpu[i], tolerance * std::max(1.0, std::abs(cpu[i])))
          << what << ", element " << i;
  };
  close([&](sf::Device d) { return sf::exp(f64(d, {300})) + sf::erf(f64(d, {300})); }, 1e-15,
        "exp, erf");
  close([&](sf::Device d) { return sf::nn::softmax(f64(d, {7, 129})); }, 1e-15, "softmax");
  close(
      [&](sf::Device d) {
        return sf::matmul(f64(d, {5, 40}), f64(d, {40, 3}));
      },
      1e-14, "matmul");
}

TEST_P(CudaDevice, CopiesBetweenDevicesBothWays) {
  const auto host = input(kCpu, {40, 3});
  const sf::Tensor gpu = host.to(kGpu);
  EXPECT_EQ(gpu.device(), kGpu);
  EXPECT_EQ(gpu.to(kCpu).to_vector<float>(), host.to_vector<float>());
  EXPECT_EQ(gpu.to_vector<float>(), host.to_vector<float>()) << "to_vector reads the GPU";
  // A strided view and a queued result go through their values.
  const sf::Tensor back = (sf::transpose(gpu, 0, 1) * 2.0f).to(kCpu);
  EXPECT_EQ(back.to_vector<float>(), (sf::transpose(host, 0, 1) * 2.0f).to_vector<float>());
  EXPECT_EQ(sf::transpose(host, 0, 1).to(kGpu).to_vector<float>(),
            sf::transpose(host, 0, 1).contiguous().to_vector<float>());
  // Larger than one staging chunk, so the copy takes several.
  const auto big = input(kCpu, {3, 1 << 20});
  EXPECT_EQ(big.to(kGpu).to(kCpu).to_vector<float>(), big.to_vector<float>());
  EXPECT_EQ(sf::zeros({0, 4}, sf::kF32, kGpu).to(kCpu).numel(), 0);
}

TEST_P(CudaDevice, MemoryStatsCountDeviceMemory) {
  sf::synchronize(kGpu);
  const sf::MemoryStats before = sf::memory_stats(kGpu);
  sf::Tensor t = sf::full({1 << 20}, 1.0, sf::kF32, kGpu);
  sf::synchronize(kGpu);
  const sf::MemoryStats during = sf::memory_stats(kGpu);
  EXPECT_EQ(during.bytes_in_use - before.bytes_in_use, 4 << 20);
  t = sf::Tensor();
  sf::synchronize(kGpu);
  EXPECT_EQ(sf::memory_stats(kGpu).bytes_in_use, before.bytes_in_use);
  EXPECT_GE(sf::memory_stats(kGpu).bytes_cached, 4 << 20) << "freed blocks are kept for reuse";
}

TEST_P(CudaDevice, TensorsMoveBetweenThreadsStreams) {
  // Made on one thread's stream, used on others' (each its own CUDA stream): their work waits
  // for the producer's, and the memory is not reused under them.
  const auto want = (input(kCpu, {64, 64}) * 3.0f + 1.0f).to_vector<float>();
  for (int round = 0; round < 5; ++round) {
    sf::Tensor made;
    std::thread producer([&] { made = input(kGpu, {64, 64}) * 3.0f; });
    producer.join();
    std::vector<std::vector<float>> got(3);
    std::vector<std::thread> consumers;
    for (int i = 0; i < 3; ++i)
      consumers.emplace_back([m = made, &got, i]() mutable {
        got[static_cast<std::size_t>(i)] = (std::move(m) + 1.0f).to_vector<float>();
      });
    made = sf::Tensor();  // dropped here while the consumers may still run
    for (auto& c : consumers) c.join();
    for (const auto& g : got) EXPECT_EQ(g, want);
  }
}

INSTANTIATE_TEST_SUITE_P(Fusion, CudaDevice, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "On" : "Off"; });

}  // namespace

namespace {

// Out of device memory: an Error naming the op when the value is read, and nothing else lost.
// Runs where the device is small enough to fill: the emulated GPU with SF_EMU_MEMORY_BYTES set
// (tests/backends/cuda/emulator/CMakeLists.txt registers it so).
TEST(CudaOutOfMemory, IsAnErrorWhereTheValueIsReadAndOtherTensorsStillCompute) {
  const char* bytes = std::getenv("SF_EMU_MEMORY_BYTES");
  if (!bytes) GTEST_SKIP() << "needs a small device: set SF_EMU_MEMORY_BYTES on the emulated GPU";
  try {
    sf::synchronize(kGpu);
  } catch (const sf::DeviceError& e) {
    GTEST_SKIP() << e.what();
  }
  const std::int64_t too_many = std::strtoll(bytes, nullptr, 10) / 4 + 1024;
  const sf::Tensor huge = sf::full({too_many}, 1.0, sf::kF32, kGpu);
  const sf::Tensor derived = sf::sum(huge * 2.0f);
  try {
    (void)derived.item<float>();
    ADD_FAILURE() << "no error";
  } catch (const sf::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("out of memory"), std::string::npos) << what;
    EXPECT_NE(what.find("full"), std::string::npos) << what;
  }
  EXPECT_EQ(sf::sum(sf::ones({1000}, sf::kF32, kGpu)).item<float>(), 1000.0f);
}

}  // namespace
