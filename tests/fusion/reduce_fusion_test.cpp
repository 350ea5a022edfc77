// Fusion through reductions (fusion/builders/reduce): the chains models are made of run as one
// kernel, and give the unfused bits in every mode (fused-interpreted, fused-compiled), for short
// and long rows (longer than a reduction block, so the split path runs), inner axes, every
// element, keepdim both ways and every dtype.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "runtime/device_runtime.h"
#include "streamfuse/streamfuse.h"
#include "tests/fusion/chain_fusion.h"
#include "tests/own_cache_dir.h"
#include "tests/reference.h"
#include "tests/tensor_bytes.h"

namespace sf = streamfuse;
using sf::Tensor;
using streamfuse::testing::bytes_of;

namespace {

using ReduceFusionTest = sf::testing::ChainFusionTest;

Tensor random_tensor(sf::Shape shape, sf::DType dtype, double lo, double hi, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  return sf::testing::tensor_of(
      sf::testing::random_values(static_cast<std::size_t>(shape.numel()), dtype, lo, hi, rng),
      shape, dtype);
}

std::vector<Tensor> softmax(const std::vector<Tensor>& in) { return {sf::nn::softmax(in[0], -1)}; }
std::vector<Tensor> softmax0(const std::vector<Tensor>& in) { return {sf::nn::softmax(in[0], 0)}; }

TEST_F(ReduceFusionTest, SoftmaxIsOneKernelInEveryRowLength) {
  for (std::int64_t n : {1, 7, 63, 64, 100, 1000, 70000}) {
    const Tensor x = random_tensor({n > 10000 ? 3 : 40, n}, sf::kF32, -8, 8, 10 + n);
    check("softmax rows of " + std::to_string(n), softmax, {x});
  }
}

TEST_F(ReduceFusionTest, LongRowsSplitOverBlocksGiveTheSameBits) {
  // One row of more than two blocks: each stage's blocks are folded on their own and merged.
  const Tensor x = random_tensor({1, 3 * 65536 + 77}, sf::kF32, -4, 4, 3);
  check("softmax of one long row", softmax, {x});
  check("x - mean(x) over every element",
        [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] - sf::mean(in[0])}; },
        {x});
}

// Empty rows (a reduction over an axis of size 0: sums are 0, means and softmax's max NaN or
// -inf), no rows, and every element of an empty tensor: the kernels store each row's results and
// walk nothing (the interpreter divided by the empty axis's size once).
TEST_F(ReduceFusionTest, EmptyAxesAndEmptyTensors) {
  const auto sums = [](const std::vector<Tensor>& in) {
    const Tensor y = in[0] * 2.0f;
    std::vector<Tensor> out{sf::sum(y * y, -1), sf::mean(y, -1, true) + 1.0f};
    if (in[0].size(0) > 0) out.push_back(sf::max(in[0] + 1.0f, 0));  // of nothing: an error
    return out;
  };
  for (const sf::Shape& shape : {sf::Shape{4, 0}, sf::Shape{0, 5}, sf::Shape{3, 0, 2}}) {
    const Tensor x = sf::zeros(shape);
    check("sums of " + shape.to_string(), sums, {x}, -1);
    check("softmax of " + shape.to_string(), softmax, {x}, -1);
    check(
        "x - mean(x) of " + shape.to_string(),
        [](const std::vector<Tensor>& in) {
          return std::vector<Tensor>{in[0] * 3.0f - sf::mean(in[0] * 3.0f)};
        },
        {x}, -1);
  }
}

TEST_F(ReduceFusionTest, NormalizationsAreOneKernel) {
  const Tensor x = random_tensor({64, 96}, sf::kF32, -6, 6, 4);
  const Tensor w = random_tensor({96}, sf::kF32, 0.5, 1.5, 5);
  const Tensor b = random_tensor({96}, sf::kF32, -1, 1, 6);
  check("layer_norm",
        [](const std::vector<Tensor>& in) {
          return std::vector<Tensor>{sf::nn::layer_norm(in[0], {96}, in[1], in[2])};
        },
        {x, w, b});
  check("rms_norm",
        [](const std::vector<Tensor>& in) {
          return std::vector<Tensor>{sf::nn::rms_norm(in[0], {96}, in[1])};
        },
        {x, w});
  check("log_softmax",
        [](const std::vector<Tensor>& in) {
          return std::vector<Tensor>{sf::nn::log_softmax(in[0] * 0.5f)};
        },
        {x});
  check("logsumexp",
        [](const std::vector<Tensor>& in) {
          const Tensor m = sf::max(in[0], -1, true);
          return std::vector<Tensor>{sf::log(sf::sum(sf::exp(in[0] - m), -1, true)) + m};
        },
        {x});
  check(
      "sum of squares",
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{sf::sum(in[0] * in[0], -1)}; },
      {x});
}

// A layer norm of a computed value (a GELU and a residual add, as an MLP block ends) is one
// kernel. In a row of at most one chunk (2048 elements) the variance and the outputs read the
// values the mean's pass computed (the compiled kernel from its row buffer, the interpreter from
// its registers) instead of computing the GELU again; longer rows compute them again. The same
// bits either way, at the chunk's edge and across it.
TEST_F(ReduceFusionTest, LaterPassesReuseWhatTheFirstComputed) {
  const auto block_end = [](const std::vector<Tensor>& in) {
    const Tensor h = in[0] + sf::nn::gelu(in[1]);
    return std::vector<Tensor>{h, sf::nn::layer_norm(h, {in[0].size(-1)})};
  };
  const auto centered_squares = [](const std::vector<Tensor>& in) {
    const Tensor e = sf::exp(in[1] * 0.25f) - in[0];
    const Tensor c = e - sf::mean(e, -1, true);
    return std::vector<Tensor>{sf::sum(c * c, -1), sf::max(c * e, -1)};
  };
  for (std::int64_t n : {1, 32, 2047, 2048, 2049, 5000}) {
    const Tensor x = random_tensor({5, n}, sf::kF32, -3, 3, 20 + n);
    const Tensor y = random_tensor({5, n}, sf::kF32, -3, 3, 30 + n);
    check("h and layer_norm(h), rows of " + std::to_string(n), block_end, {x, y});
    check("three stages over a computed row of " + std::to_string(n), centered_squares, {x, y});
  }
}

// Short rows run several at a time in the interpreter (each instruction over a batch of rows,
// each row folded on its own): rows that fill batches and rows left over, per-row inputs (a
// value per row, read by the code between the stages) and per-row outputs, each row's own.
TEST_F(ReduceFusionTest, ShortRowsInBatches) {
  const auto scaled = [](const std::vector<Tensor>& in) {
    const Tensor v = sf::sum(in[0] * in[0], -1, true) * in[1];
    return std::vector<Tensor>{v, in[0] / (v + 1.0f) - sf::max(in[0], -1, true)};
  };
  for (const sf::Shape& shape : {sf::Shape{1, 3}, sf::Shape{7, 1}, sf::Shape{67, 16},
                                 sf::Shape{3, 50, 20}, sf::Shape{130, 512}}) {
    sf::Shape per_row = shape;
    per_row[per_row.rank() - 1] = 1;
    const Tensor x = random_tensor(shape, sf::kF32, -2, 2, 40 + shape.numel());
    const Tensor s = random_tensor(per_row, sf::kF32, 0.5, 2, 50 + shape.numel());
    check("per-row scale and outputs of " + shape.to_string(), scaled, {x, s});
  }
}

// The compiled kernel runs whole rows of at most one chunk (2048 elements) in groups of up to 4,
// stage by stage, each row's values at its own place in the stage buffers: 4 rows of at most 512,
// 2 of at most 1,024, 1 above, and the group a launch's rows leave over. Each row's stages, its
// per-row input and outputs, and argmax's index are its own, as the row walk computes them (rows
// of 2,049 elements).
TEST_F(ReduceFusionTest, RowGroupsKeepEachRowsValues) {
  const auto softmax = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{sf::nn::softmax(in[0] * in[1], -1)};
  };
  const auto scaled = [](const std::vector<Tensor>& in) {
    const Tensor v = sf::sum(in[0] * in[0], -1, true) * in[1];
    return std::vector<Tensor>{v, in[0] / (v + 1.0f) - sf::max(in[0], -1, true)};
  };
  const auto argmax = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{sf::argmax(sf::exp(in[0]) - in[0] * in[1], -1)};
  };
  // From rows of 512 a group prefetches the next group's rows (each contiguous operand's, the
  // bool mask's bytes among them) while it computes its exponentials.
  const auto masked = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{sf::nn::softmax(sf::where(in[2], in[0] * 0.125f, -INFINITY), -1)};
  };
  for (std::int64_t n : {1, 5, 511, 512, 513, 1024, 1025, 2048, 2049})
    for (std::int64_t rows : {1, 3, 4, 9}) {
      const std::string shape = std::to_string(rows) + " rows of " + std::to_string(n);
      const Tensor x = random_tensor({rows, n}, sf::kF32, -2, 2, 60 + rows * n);
      const Tensor s = random_tensor({rows, 1}, sf::kF32, 0.5, 2, 70 + rows * n);
      check("softmax, " + shape, softmax, {x, s});
      // A single element launches no kernel for this program (-1: results checked, not kernels).
      check("per-row scale and outputs, " + shape, scaled, {x, s}, rows * n == 1 ? -1 : 1);
      check("argmax, " + shape, argmax, {x, s});
      const Tensor m = random_tensor({rows, n}, sf::kF32, -1, 1, 90 + rows * n) < 0.5f;
      check("masked softmax, " + shape, masked, {x, s, m});
    }
  const Tensor h = random_tensor({7, 300}, sf::kF16, -2, 2, 80);
  check("layer_norm of f16 rows",
        [](const std::vector<Tensor>& in) {
          return std::vector<Tensor>{sf::nn::layer_norm(in[0], {300})};
        },
        {h});
}

// Along the last axis (or one with only size-1 dimensions after it) a chain is one kernel; along
// an inner axis the reduction stays unfused (a row-by-row kernel would read a cache line per
// element), and the element-wise ops around it fuse on their own. Same bits either way.
TEST_F(ReduceFusionTest, MaskedSoftmaxAndConstants) {
  const Tensor s = random_tensor({24, 24}, sf::kF32, -5, 5, 13);
  check("causal softmax",
        [](const std::vector<Tensor>& in) {
          const Tensor mask = sf::unsqueeze(sf::arange(24), 1) < sf::unsqueeze(sf::arange(24), 0);
          return std::vector<Tensor>{sf::nn::softmax(sf::where(mask, -INFINITY, in[0]), -1)};
        },
        {s});
  // A constant a handle still holds is written by the kernel: of the full shape and per row.
  check("constants kept",
        [](const std::vector<Tensor>& in) {
          const Tensor c = sf::full({24, 24}, 0.25f), r = sf::full({24, 1}, 2.0f);
          const Tensor m = sf::max(in[0] * c, -1, true);
          return std::vector<Tensor>{c, in[0] - m * r, r + m};
        },
        {s});
  // A reduction of a constant: the reduced register is the constant's scalar (per-row code, as
  // every scalar), held and not held.
  check(
      "a constant reduced",
      [](const std::vector<Tensor>& in) {
        const Tensor c = sf::full({24, 24}, 255, sf::kU8);
        return std::vector<Tensor>{c, sf::sum(c, 1), sf::max(sf::full({24, 24}, 0.5f), -1) + in[0]};
      },
      {s});
}

// Along an inner axis a chain is one kernel too, walking the rows by column tiles (every row's
// values folded in order, as the unfused reduction of a strided row folds them).
TEST_F(ReduceFusionTest, InnerAxesAndEveryElement) {
  const Tensor x = random_tensor({6, 50, 9}, sf::kF32, -3, 3, 7);
  for (int axis : {0, 1, 2}) {
    const std::int64_t kernels = 1;
    for (bool keepdim : {false, true}) {
      check(
          "softmax axis " + std::to_string(axis),
          [axis](const std::vector<Tensor>& in) {
            return std::vector<Tensor>{sf::nn::softmax(in[0], axis)};
          },
          {x}, kernels);
      check(
          "sum, max, argmax axis " + std::to_string(axis) + (keepdim ? " keepdim" : ""),
          [axis, keepdim](const std::vector<Tensor>& in) {
            const Tensor y = in[0] * 2.0f + 1.0f;
            return std::vector<Tensor>{sf::sum(y, axis, keepdim), sf::max(y, axis, keepdim),
                                       sf::argmax(y, axis, keepdim)};
          },
          {x}, kernels);
    }
  }
  check(
      "softmax along an axis with size-1 dimensions after it",
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{sf::nn::softmax(in[0], 1)}; },
      {random_tensor({6, 50, 1, 1}, sf::kF32, -3, 3, 12)});
  check("every element",
        [](const std::vector<Tensor>& in) {
          const Tensor y = sf::exp(in[0] * 0.25f);
          return std::vector<Tensor>{y / sf::sum(y), sf::min(y)};
        },
        {x});
}

// Column tiles in every dtype, of more rows than a tile (and a partial last one), over columns
// longer than a reduction block (blocks folded on their own and merged in order), and with
// per-row values, broadcast inputs and an input made by the segment.
TEST_F(ReduceFusionTest, ColumnTiles) {
  for (sf::DType dtype : {sf::kF32, sf::kF16, sf::kBF16, sf::kI32, sf::kI64, sf::kBool}) {
    const Tensor x = random_tensor({7, 33, 150}, dtype, -20, 20, 30);
    check(
        std::string("sums and extremes over axis 1, ") + std::string(sf::dtype_name(dtype)),
        [](const std::vector<Tensor>& in) {
          return std::vector<Tensor>{sf::sum(in[0], 1, true), sf::max(in[0], 1),
                                     sf::argmax(in[0], 1), sf::min(in[0], 1, true)};
        },
        {x}, -1);
    check(
        std::string("x - mean(x) over axis 0, ") + std::string(sf::dtype_name(dtype)),
        [](const std::vector<Tensor>& in) {
          const Tensor y = in[0].to(sf::kF32) * 0.5f;
          return std::vector<Tensor>{y - sf::mean(y, 0, true)};
        },
        {x}, 1);
  }
  const Tensor tall = random_tensor({70000, 3}, sf::kF32, -3, 3, 31);
  check("softmax of columns longer than a block", softmax0, {tall}, 1);
  check(
      "x - mean(x) over columns longer than a block",
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{in[0] * 2.0f - sf::mean(in[0] * 2.0f, 0, true)};
      },
      {tall}, 1);
  const Tensor w = random_tensor({1, 96}, sf::kF32, -1, 1, 32);
  check(
      "layer_norm over axis 0 with a per-column weight",
      [](const std::vector<Tensor>& in) {
        const Tensor m = sf::mean(in[0], 0, true);
        const Tensor d = in[0] - m;
        return std::vector<Tensor>{d * sf::rsqrt(sf::mean(d * d, 0, true) + 1e-5f) * in[1]};
      },
      {random_tensor({40, 96}, sf::kF32, -3, 3, 33), w}, 1);
  // The interpreter's tiles are a register's worth of columns (1024): wider rows take several
  // tiles, the last one cut by the end of the row or of a thread's range; an operand broadcast
  // along the tile is gathered, a dense one read in place; narrow tiles take several steps per
  // pass.
  const auto centered = [](const std::vector<Tensor>& in) {
    const Tensor y = in[0] * 0.5f;
    return std::vector<Tensor>{y - sf::mean(y, 0, true) + in[1]};
  };
  check("x - mean(x, 0) + bias, 2500 columns", centered,
        {random_tensor({37, 2500}, sf::kF32, -3, 3, 34),
         random_tensor({1, 2500}, sf::kF32, -1, 1, 35)},
        1);
  check(
      "x - mean(x, 0) + a value per row (broadcast along the tile: gathered), 4100 columns",
      centered,
      {random_tensor({29, 4100}, sf::kF32, -3, 3, 36), random_tensor({29, 1}, sf::kF32, -1, 1, 37)},
      1);
  check("softmax over axis 0 of 2100 columns", softmax0,
        {random_tensor({45, 2100}, sf::kF32, -3, 3, 38)}, 1);
  // Compiled kernels take tiles of 256 rows where a thread's share is larger than 2^18 elements
  // (else 64): several such tiles per thread, the last cut by the row's or the thread's end.
  check(
      "x - mean(x, 0) + bias, 1100 columns of 600 steps", centered,
      {random_tensor({600, 1100}, sf::kF32, -3, 3, 41), random_tensor({1100}, sf::kF32, -1, 1, 42)},
      1);
  check(
      "x - mean(x, 0) + bias, 200 columns of 3000 steps", centered,
      {random_tensor({3000, 200}, sf::kF32, -3, 3, 39), random_tensor({200}, sf::kF32, -1, 1, 40)},
      1);
}

// While its kernel compiles, a large reduction over an outer axis runs as its ops (the
// interpreter's column walk takes up to 1.5x their time); once the kernel is there, it runs.
// Same bits every time. (With STREAMFUSE_JIT=interpret the interpreter still runs it: ColumnTiles.)
TEST_F(ReduceFusionTest, LargeColumnWalksRunAsOpsUntilTheirKernelIsCompiled) {
  const auto chain = [](const Tensor& x) {
    const Tensor y = sf::exp(x * 0.25f);
    return y - sf::mean(y, 0, true) * 1.5f;
  };
  const Tensor x = random_tensor({512, 160}, sf::kF32, -3, 3, 40);  // 81,920 elements
  sf::Config c = sf::config();
  c.fusion = false;
  sf::set_config(c);
  const std::vector<std::uint8_t> unfused = bytes_of(chain(x));

  c.fusion = true;
  c.jit = sf::JitMode::kCompile;
  sf::set_config(c);
  auto* cache = sf::runtime::DeviceRuntime::get(sf::Device::cpu()).kernel_cache();
  ASSERT_NE(cache, nullptr);
  for (int i = 0; i < 3; ++i) {  // the plan is explored, then matched, then runs its kernel
    sf::synchronize();
    const sf::FusionStats before = sf::fusion_stats();
    const std::vector<std::uint8_t> fused = bytes_of(chain(x));
    const sf::FusionStats after = sf::fusion_stats();
    EXPECT_EQ(fused, unfused) << "iteration " << i;
    EXPECT_EQ(after.interpreted_launches, before.interpreted_launches) << "iteration " << i;
    if (after.kernels_failed > 0) {
      GTEST_SKIP() << "no working compiler here";
    }
    if (i == 2) {
      EXPECT_EQ(after.compiled_launches - before.compiled_launches, 1);
    }
    if (i == 1) cache->wait_idle();
  }
}

// Floats summed in double are exact, whatever the order, unless some cancel what came before
// them: these rows have pairs of +2^80 and -2^80 planted among small values, so each sum below
// depends on the order its elements are folded in (lanes of a contiguous row, blocks, in order
// along a strided one), which fused must keep.
Tensor with_cancellations(sf::Shape shape, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> small(-1, 1);
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  for (float& x : v) x = small(rng);
  for (std::size_t i = 5; i + 1 < v.size(); i += 37) {
    v[i] = std::ldexp(1.0f, 80);
    v[i + 1] = -std::ldexp(1.0f, 80);
  }
  return sf::from_vector(v, shape);
}

TEST_F(ReduceFusionTest, SumsFoldInTheUnfusedOrder) {
  for (std::int64_t n : {40, 64, 1000, 140000}) {
    const Tensor x = with_cancellations({n > 10000 ? 1 : 8, n}, 20 + n);
    check("sum of rows of " + std::to_string(n),
          [](const std::vector<Tensor>& in) {
            return std::vector<Tensor>{sf::sum(in[0] * 3.0f, -1), sf::mean(in[0] - 1.0f, -1, true)};
          },
          {x});
    check("sum of every element of " + std::to_string(n),
          [](const std::vector<Tensor>& in) { return std::vector<Tensor>{sf::sum(in[0] * 3.0f)}; },
          {x});
  }
  const Tensor y = with_cancellations({5, 300, 7}, 30);
  for (int axis : {0, 1, 2})
    check(
        "sum along axis " + std::to_string(axis),
        [axis](const std::vector<Tensor>& in) {
          return std::vector<Tensor>{sf::sum(in[0] * 3.0f, axis)};
        },
        {y}, axis == 2 ? 1 : -1);  // inner axes stay unfused
  // Reduced as it is (no op before it): the tensor's own layout decides the order.
  check("sum of an input",
        [](const std::vector<Tensor>& in) {
          const Tensor s = sf::sum(in[0], -1, true);
          return std::vector<Tensor>{in[0] / s};
        },
        {with_cancellations({4, 5000}, 31)});
  // A transposed view: along the reduced axis its elements are strided (the unfused sum folds
  // them in order, no lanes), which a row-by-row kernel reads a cache line per element: the
  // segment runs op by op.
  check(
      "sum of a transposed input",
      [](const std::vector<Tensor>& in) {
        const Tensor t = sf::transpose(in[0], 0, 1);
        return std::vector<Tensor>{t / sf::sum(t, -1, true)};
      },
      {with_cancellations({3000, 6}, 32)}, 0);
  // Every element of a view: the eager kernel folds it run by run, an order the fused kernel
  // does not follow, so the segment runs op by op too.
  check(
      "sum of every element of a transposed input",
      [](const std::vector<Tensor>& in) {
        const Tensor t = sf::transpose(in[0], 0, 1);
        return std::vector<Tensor>{t * sf::sum(t)};
      },
      {with_cancellations({300, 70}, 33)}, 0);
}

TEST_F(ReduceFusionTest, EveryDtype) {
  for (sf::DType dtype :
       {sf::kF16, sf::kBF16, sf::kI32, sf::kI64, sf::kBool, sf::kI8, sf::kU8, sf::kF64}) {
    const Tensor x = random_tensor({33, 130}, dtype, -50, 50, 8);
    check(
        std::string("sum, mean, max, min, argmax of ") + std::string(sf::dtype_name(dtype)),
        [](const std::vector<Tensor>& in) {
          return std::vector<Tensor>{sf::sum(in[0], -1), sf::mean(in[0], 1, true),
                                     sf::max(in[0], -1), sf::min(in[0], 0), sf::argmax(in[0], -1)};
        },
        // One kernel: sum, mean and max of axis 1; min over axis 0 and argmax after it are
        // lone reductions, which fusing saves nothing (they run as eager kernels).
        {x}, 1);
  }
  const Tensor h = random_tensor({16, 200}, sf::kF16, -6, 6, 9);
  check("f16 softmax", softmax, {h});
  const Tensor d = random_tensor({16, 3000}, sf::kF64, -6, 6, 10);
  check("f64 softmax", softmax, {d});
}

// Quantized weights: i8 or u8 values with a per-channel scale (and zero point) become f32 in one
// pass, the conversion fused into the arithmetic; and into a reduction over the dequantized rows.
TEST_F(ReduceFusionTest, QuantizedWeightsDequantizeInOneKernel) {
  const Tensor w = random_tensor({64, 96}, sf::kI8, -128, 128, 12);
  const Tensor q = random_tensor({64, 96}, sf::kU8, 0, 256, 13);
  const Tensor scale = random_tensor({64, 1}, sf::kF32, 0.001, 0.05, 14);
  const Tensor zero = random_tensor({64, 1}, sf::kF32, 100, 156, 15);
  check(
      "i8 * scale",
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0].to(sf::kF32) * in[1]}; },
      {w, scale}, 1);
  check(
      "(u8 - zero point) * scale",
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{(in[0].to(sf::kF32) - in[2]) * in[1]};
      },
      {q, scale, zero}, 1);
  check(
      "row sums of i8 * scale",
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{sf::sum(in[0].to(sf::kF32) * in[1], -1)};
      },
      {w, scale}, 1);
}

// On cuda:0 (a GPU, or the emulated one in CI): the fused reduction kernels give the CPU's bits,
// lanes, blocks and strided rows alike. Skips without a device.
TEST_F(ReduceFusionTest, CudaGivesTheCpusBits) {
  try {
    sf::synchronize(sf::Device::cuda(0));
  } catch (const sf::DeviceError& e) {
    GTEST_SKIP() << e.what();
  }
  using Chain = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
  const std::vector<std::pair<std::string, Chain>> chains = {
      {"softmax", softmax},
      {"layer_norm of the row",
       [](const std::vector<Tensor>& in) {
         const sf::Shape s = in[0].shape();
         return std::vector<Tensor>{sf::nn::layer_norm(in[0], {s[s.rank() - 1]})};
       }},
      {"sums and argmax",
       [](const std::vector<Tensor>& in) {
         const Tensor y = in[0] * 3.0f;
         return std::vector<Tensor>{sf::sum(y, -1, true), sf::argmax(y, -1), sf::sum(y)};
       }},
      {"every element",
       [](const std::vector<Tensor>& in) {
         return std::vector<Tensor>{in[0] - sf::mean(in[0] * 2.0f)};
       }},
      {"column walks: softmax, sums and argmax over axis 0",
       [](const std::vector<Tensor>& in) {
         const Tensor y = in[0] * 3.0f;
         return std::vector<Tensor>{sf::nn::softmax(in[0], 0), sf::sum(y, 0, true) - y,
                                    sf::argmax(y, 0)};
       }},
  };
  const std::vector<Tensor> inputs = {with_cancellations({6, 100}, 40),
                                      with_cancellations({2, 70000}, 41),
                                      random_tensor({5, 33}, sf::kF32, -3, 3, 42)};
  sf::Config c = sf::config();
  c.fusion = true;
  sf::set_config(c);
  for (const auto& [name, chain] : chains) {
    for (const Tensor& x : inputs) {
      SCOPED_TRACE(name + " of " + std::to_string(x.shape().numel()) + " elements");
      const Tensor on_gpu = x.to(sf::Device::cuda(0));
      std::vector<std::vector<unsigned char>> cpu, gpu;
      for (int i = 0; i < 3; ++i) {  // plans made, then matched
        cpu.clear();
        gpu.clear();
        for (const Tensor& t : chain({x})) cpu.push_back(bytes_of(t));
        for (const Tensor& t : chain({on_gpu})) gpu.push_back(bytes_of(t.to(sf::Device::cpu())));
      }
      EXPECT_EQ(gpu, cpu);
    }
  }
}

}  // namespace
