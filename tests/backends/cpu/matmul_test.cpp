// MatmulEngine against a naive reference: a triple loop in double for float dtypes (within a
// rounding bound for K and the dtype), wrapping unsigned arithmetic for integers (exact). Every
// operand lives in storage laid out by a Spec (storage order, gaps, reversed and zero-stride
// dimensions) whose unused elements are NaN / -1, so reading a wrong element shows.
#include "backends/cpu/matmul.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backends/cpu/isa.h"
#include "backends/cpu/kernels/kernels.h"
#include "core/float16.h"
#include "core/log.h"
#include "streamfuse/error.h"

namespace core = streamfuse::core;

namespace streamfuse {
// Test names and failure messages show "f16" rather than a byte.
void PrintTo(DType d, std::ostream* os) { *os << dtype_name(d); }
}  // namespace streamfuse

namespace streamfuse::backends::cpu {
namespace {

// How a tensor is placed in its storage. Vectors are per dimension, outermost first; dimensions
// past a vector's end (all, for an empty one) get the default.
struct Spec {
  std::vector<int> order = {};          // logical dimensions, outermost to innermost in storage
  std::vector<std::int64_t> step = {};  // 2: every other element along that dimension
  std::vector<bool> flip = {};          // negative stride
  std::vector<bool> zero = {};          // stride 0: values repeat along that dimension
};

enum class Values { kRandom, kSmallIntegers };

struct TestTensor {
  DType dtype = kF32;
  Shape shape;
  Strides strides{};
  std::vector<std::uint64_t> storage;  // 8-byte words: aligned for every dtype
  std::int64_t offset = 0;             // elements from the storage's start to element 0
  std::vector<double> values;          // row-major over `shape`, exactly as stored (floats)
  std::vector<std::int64_t> ints;      // the same for integers

  const void* data() const {
    return reinterpret_cast<const char*>(storage.data()) +
           offset * static_cast<std::int64_t>(element_size(dtype));
  }
  MatmulOperand operand() const { return {data(), shape, strides}; }
};

double round_to(DType dtype, double v) {
  switch (dtype) {
    case kF16:
      return core::half_bits_to_float(core::float_to_half_bits(static_cast<float>(v)));
    case kBF16:
      return core::bf16_bits_to_float(core::float_to_bf16_bits(static_cast<float>(v)));
    default:
      return static_cast<float>(v);
  }
}

void store(DType dtype, void* base, std::int64_t i, double f, std::int64_t n) {
  switch (dtype) {
    case kF32:
      static_cast<float*>(base)[i] = static_cast<float>(f);
      break;
    case kF16:
      static_cast<std::uint16_t*>(base)[i] = core::float_to_half_bits(static_cast<float>(f));
      break;
    case kBF16:
      static_cast<std::uint16_t*>(base)[i] = core::float_to_bf16_bits(static_cast<float>(f));
      break;
    case kI32:
      static_cast<std::int32_t*>(base)[i] = static_cast<std::int32_t>(n);
      break;
    case kI64:
      static_cast<std::int64_t*>(base)[i] = n;
      break;
    default:
      FAIL() << "no such test dtype";
  }
}

double load_float(DType dtype, const void* base, std::int64_t i) {
  switch (dtype) {
    case kF16:
      return core::half_bits_to_float(static_cast<const std::uint16_t*>(base)[i]);
    case kBF16:
      return core::bf16_bits_to_float(static_cast<const std::uint16_t*>(base)[i]);
    default:
      return static_cast<const float*>(base)[i];
  }
}

// The index of logical element `linear` along each dimension of `shape`.
std::vector<std::int64_t> unravel(const Shape& shape, std::int64_t linear) {
  std::vector<std::int64_t> idx(static_cast<std::size_t>(shape.rank()));
  for (int d = shape.rank() - 1; d >= 0; --d) {
    idx[static_cast<std::size_t>(d)] = linear % shape[d];
    linear /= shape[d];
  }
  return idx;
}

TestTensor make_tensor(DType dtype, const Shape& shape, std::mt19937_64& rng, const Spec& spec = {},
                       Values kind = Values::kRandom) {
  TestTensor t;
  t.dtype = dtype;
  t.shape = shape;
  const int r = shape.rank();
  auto at = [](const auto& v, int d, auto fallback) {
    return static_cast<std::size_t>(d) < v.size() ? v[static_cast<std::size_t>(d)] : fallback;
  };
  std::int64_t running = 1;
  for (int i = r - 1; i >= 0; --i) {
    const int d = spec.order.empty() ? i : spec.order[static_cast<std::size_t>(i)];
    auto& stride = t.strides[static_cast<std::size_t>(d)];
    if (at(spec.zero, d, false)) {
      stride = 0;
      continue;
    }
    const std::int64_t step = at(spec.step, d, std::int64_t{1});
    stride = running * step;
    running *= std::max<std::int64_t>(shape[d], 1) * step;
  }
  for (int d = 0; d < r; ++d) {
    auto& stride = t.strides[static_cast<std::size_t>(d)];
    if (!at(spec.flip, d, false) || shape[d] == 0) continue;
    t.offset += (shape[d] - 1) * stride;
    stride = -stride;
  }
  const std::int64_t words = running * static_cast<std::int64_t>(element_size(dtype)) / 8 + 1;
  t.storage.assign(static_cast<std::size_t>(words), ~std::uint64_t{0});  // NaN, or -1

  const std::int64_t numel = shape.numel();
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::uniform_int_distribution<std::int64_t> small(-3, 3);
  std::uniform_int_distribution<std::int64_t> full(
      dtype == kI32 ? std::numeric_limits<std::int32_t>::min()
                    : std::numeric_limits<std::int64_t>::min(),
      dtype == kI32 ? std::numeric_limits<std::int32_t>::max()
                    : std::numeric_limits<std::int64_t>::max());
  t.values.resize(static_cast<std::size_t>(numel));
  t.ints.resize(static_cast<std::size_t>(numel));
  for (std::int64_t i = 0; i < numel; ++i) {
    const bool small_ints = kind == Values::kSmallIntegers;
    t.ints[static_cast<std::size_t>(i)] = small_ints ? small(rng) : full(rng);
    t.values[static_cast<std::size_t>(i)] =
        small_ints ? static_cast<double>(t.ints[static_cast<std::size_t>(i)])
                   : round_to(dtype, uniform(rng));
  }
  // Along a zero-stride dimension every element is the one at index 0 there.
  for (std::int64_t i = 0; i < numel; ++i) {
    std::vector<std::int64_t> idx = unravel(shape, i);
    std::int64_t source = 0, address = t.offset;
    for (int d = 0; d < r; ++d) {
      const auto u = static_cast<std::size_t>(d);
      if (at(spec.zero, d, false)) idx[u] = 0;
      source = source * shape[d] + idx[u];
      address += idx[u] * t.strides[u];
    }
    t.values[static_cast<std::size_t>(i)] = t.values[static_cast<std::size_t>(source)];
    t.ints[static_cast<std::size_t>(i)] = t.ints[static_cast<std::size_t>(source)];
    store(dtype, t.storage.data(), address, t.values[static_cast<std::size_t>(i)],
          t.ints[static_cast<std::size_t>(i)]);
  }
  return t;
}

// NumPy's matmul shape.
Shape matmul_shape(const Shape& a, const Shape& b) {
  const int ba = std::max(0, a.rank() - 2), bb = std::max(0, b.rank() - 2);
  const int batch = std::max(ba, bb);
  Shape out;
  for (int i = 0; i < batch; ++i) {
    const int ia = i - (batch - ba), ib = i - (batch - bb);
    const std::int64_t x = ia >= 0 ? a[ia] : 1, y = ib >= 0 ? b[ib] : 1;
    out.push_back(x == 1 ? y : x);
  }
  if (a.rank() >= 2) out.push_back(a[a.rank() - 2]);
  if (b.rank() >= 2) out.push_back(b[b.rank() - 1]);
  return out;
}

// Row-major index into `x` of element (batch index `out_batch` of the product, row, col), with
// x's batch dimensions aligned from the right and broadcasting; rows / cols of a 1-D x are 0.
std::int64_t element_index(const Shape& x, bool is_a, const std::vector<std::int64_t>& out_batch,
                           std::int64_t row, std::int64_t col) {
  if (x.rank() == 1) return is_a ? col : row;
  const int own = x.rank() - 2, skip = static_cast<int>(out_batch.size()) - own;
  std::int64_t index = 0;
  for (int d = 0; d < own; ++d)
    index = index * x[d] + (x[d] == 1 ? 0 : out_batch[static_cast<std::size_t>(d + skip)]);
  return (index * x[own] + row) * x[own + 1] + col;
}

// Compares engine.run(a @ b) with the reference; returns "" or what went wrong.
std::string check_matmul(MatmulEngine& engine, const TestTensor& a, const TestTensor& b,
                         int num_threads = 0, bool exact = false) {
  const DType dtype = a.dtype;
  const Shape out_shape = matmul_shape(a.shape, b.shape);
  const std::int64_t numel = out_shape.numel();
  const std::int64_t k = a.shape[a.shape.rank() - 1];
  // One guard word past the end catches writes out of bounds.
  const std::size_t words = static_cast<std::size_t>(numel) * element_size(dtype) / 8 + 2;
  std::vector<std::uint64_t> out(words, 0x5a5a5a5a5a5a5a5aull);
  engine.run(dtype, a.operand(), b.operand(), out.data(), out_shape, num_threads);
  if (out.back() != 0x5a5a5a5a5a5a5a5aull) return "wrote past the end of out";

  const int batch_rank = out_shape.rank() - (a.shape.rank() >= 2) - (b.shape.rank() >= 2);
  const std::int64_t m = a.shape.rank() >= 2 ? a.shape[a.shape.rank() - 2] : 1;
  const std::int64_t n = b.shape.rank() >= 2 ? b.shape[b.shape.rank() - 1] : 1;
  // Bounds: f32 accumulation (unit roundoff 2^-24) then rounding to the dtype.
  const double u_acc = std::ldexp(1.0, -24);
  const double u_out = dtype == kF16    ? std::ldexp(1.0, -11)
                       : dtype == kBF16 ? std::ldexp(1.0, -8)
                                        : u_acc;
  const double floor = dtype == kF16 ? std::ldexp(1.0, -24) : 1e-37;
  int failures = 0;
  std::string report;
  for (std::int64_t i = 0; i < numel && failures < 5; ++i) {
    std::vector<std::int64_t> batch(static_cast<std::size_t>(batch_rank));
    std::int64_t rest = i / (m * n);
    for (int d = batch_rank - 1; d >= 0; --d) {
      batch[static_cast<std::size_t>(d)] = rest % out_shape[d];
      rest /= out_shape[d];
    }
    const std::int64_t row = (i / n) % m, col = i % n;
    double sum = 0, abs_sum = 0;
    std::uint64_t wrapped = 0;
    for (std::int64_t kk = 0; kk < k; ++kk) {
      const auto ia = static_cast<std::size_t>(element_index(a.shape, true, batch, row, kk));
      const auto ib = static_cast<std::size_t>(element_index(b.shape, false, batch, kk, col));
      sum += a.values[ia] * b.values[ib];
      abs_sum += std::abs(a.values[ia] * b.values[ib]);
      wrapped += static_cast<std::uint64_t>(a.ints[ia]) * static_cast<std::uint64_t>(b.ints[ib]);
    }
    std::string bad;
    if (dtype == kI32) {
      const std::uint32_t got =
          static_cast<const std::uint32_t*>(static_cast<void*>(out.data()))[i];
      if (got != static_cast<std::uint32_t>(wrapped))
        bad = std::to_string(static_cast<std::int32_t>(got)) + " vs " +
              std::to_string(static_cast<std::int32_t>(static_cast<std::uint32_t>(wrapped)));
    } else if (dtype == kI64) {
      const std::uint64_t got = out[static_cast<std::size_t>(i)];
      if (got != wrapped)
        bad = std::to_string(static_cast<std::int64_t>(got)) + " vs " +
              std::to_string(static_cast<std::int64_t>(wrapped));
    } else {
      const double got = load_float(dtype, out.data(), i);
      const double acc_error = 2 * static_cast<double>(k) * u_acc * abs_sum;
      const double tolerance = exact ? 0 : acc_error + u_out * (std::abs(sum) + acc_error) + floor;
      if (!(std::abs(got - sum) <= tolerance))
        bad = std::to_string(got) + " vs " + std::to_string(sum) + " (tolerance " +
              std::to_string(tolerance) + ")";
    }
    if (!bad.empty()) {
      ++failures;
      report += "\n  element " + std::to_string(i) + ": " + bad;
    }
  }
  if (report.empty()) return "";
  return std::string(dtype_name(dtype)) + " " + a.shape.to_string() + " @ " + b.shape.to_string() +
         report;
}

class MatmulTest : public ::testing::TestWithParam<DType> {
 protected:
  DType dtype() const { return GetParam(); }
  TestTensor tensor(const Shape& shape, const Spec& spec = {}) {
    return make_tensor(dtype(), shape, rng_, spec);
  }
  void expect(const TestTensor& a, const TestTensor& b) {
    EXPECT_EQ(check_matmul(engine_, a, b), "");
  }
  void expect(const Shape& a, const Shape& b, const Spec& sa = {}, const Spec& sb = {}) {
    expect(tensor(a, sa), tensor(b, sb));
  }

  MatmulEngine engine_;
  std::mt19937_64 rng_{42};
};

TEST_P(MatmulTest, VectorTimesVector) {
  for (std::int64_t k : {1, 3, 17, 65, 300}) expect(Shape{k}, Shape{k});
}

TEST_P(MatmulTest, VectorTimesMatrix) {
  for (std::int64_t k : {1, 3, 17, 65})
    for (std::int64_t n : {1, 3, 17, 65}) expect(Shape{k}, Shape{k, n});
}

TEST_P(MatmulTest, MatrixTimesVector) {
  for (std::int64_t m : {1, 3, 17, 65})
    for (std::int64_t k : {1, 3, 17, 65}) expect(Shape{m, k}, Shape{k});
}

TEST_P(MatmulTest, MatrixTimesMatrixOddSizes) {
  for (std::int64_t m : {1, 3, 17, 65})
    for (std::int64_t k : {1, 3, 17, 65})
      for (std::int64_t n : {1, 3, 17, 65}) expect(Shape{m, k}, Shape{k, n});
}

// Larger than every block of the integer loop (64 rows, 256 deep, 256 columns) and not a
// multiple of any register tile.
TEST_P(MatmulTest, CrossesBlockBoundaries) { expect(Shape{130, 300}, Shape{300, 270}); }

TEST_P(MatmulTest, BatchBroadcastsSizeOneAndMissingDims) {
  expect(Shape{1, 5, 7}, Shape{4, 7, 3});
  expect(Shape{3, 5, 7}, Shape{1, 7, 3});
  expect(Shape{2, 1, 5, 7}, Shape{3, 7, 6});  // b has no first dimension
  expect(Shape{4, 7}, Shape{2, 3, 7, 5});     // a has no batch dimensions at all
  expect(Shape{2, 3, 5, 7}, Shape{7});        // 1-D b under a batch
  expect(Shape{7}, Shape{2, 3, 7, 5});        // 1-D a under a batch
  expect(Shape{2, 1, 3, 1, 4, 5}, Shape{1, 2, 1, 3, 5, 2});
}

TEST_P(MatmulTest, BatchBroadcastsZeroStrides) {
  // Expanded views: size > 1 with stride 0, values repeating along them.
  expect(Shape{4, 5, 7}, Shape{4, 7, 3}, Spec{.zero = {true, false, false}});
  expect(Shape{4, 5, 7}, Shape{4, 7, 3}, Spec{}, Spec{.zero = {true, false, false}});
  // Both operands constant along a batch dimension the product has.
  expect(Shape{4, 5, 7}, Shape{7, 3}, Spec{.zero = {true}});
  expect(Shape{4, 5, 7}, Shape{1, 7, 3}, Spec{.zero = {true}});
  expect(Shape{4, 5, 7}, Shape{4, 7, 3}, Spec{.zero = {true}}, Spec{.zero = {true}});
  expect(Shape{7}, Shape{2, 4, 7, 3}, Spec{}, Spec{.zero = {true, true}});
  expect(Shape{2, 3, 5, 7}, Shape{2, 3, 7, 6}, Spec{.zero = {false, true, false, false}},
         Spec{.zero = {true, false, false, false}});
}

TEST_P(MatmulTest, TransposedViews) {
  const Spec t2{.order = {1, 0}};
  for (std::int64_t m : {1, 3, 17, 65}) {
    expect(Shape{m, 17}, Shape{17, 33}, t2);
    expect(Shape{m, 17}, Shape{17, 33}, Spec{}, t2);
    expect(Shape{m, 17}, Shape{17, 33}, t2, t2);
  }
  const Spec t3{.order = {0, 2, 1}};
  expect(Shape{3, 9, 17}, Shape{3, 17, 5}, t3, t3);
  // The batch dimension innermost in storage: a layout oneDNN's fast kernels can't read.
  const Spec batch_inner{.order = {1, 2, 0}};
  expect(Shape{3, 9, 17}, Shape{3, 17, 5}, batch_inner, batch_inner);
}

TEST_P(MatmulTest, StridedSlices) {
  expect(Shape{9, 17}, Shape{17, 5}, Spec{.step = {2, 1}}, Spec{.step = {2, 1}});
  expect(Shape{9, 17}, Shape{17, 5}, Spec{.step = {1, 2}}, Spec{.step = {1, 2}});
  expect(Shape{9, 17}, Shape{17, 5}, Spec{.step = {2, 2}}, Spec{.step = {3, 2}});
  expect(Shape{3, 9, 17}, Shape{3, 17, 5}, Spec{.step = {2, 1, 1}}, Spec{.step = {1, 2, 2}});
  expect(Shape{17}, Shape{17, 5}, Spec{.step = {2}});
  expect(Shape{9, 17}, Shape{17}, Spec{}, Spec{.step = {3}});
}

TEST_P(MatmulTest, ZeroStrideInsideMatrix) {
  expect(Shape{9, 17}, Shape{17, 5}, Spec{.zero = {false, true}});  // a's rows constant
  expect(Shape{9, 17}, Shape{17, 5}, Spec{.zero = {true, false}});  // a's columns constant
  expect(Shape{9, 17}, Shape{17, 5}, Spec{}, Spec{.zero = {false, true}});
  expect(Shape{9, 17}, Shape{17, 5}, Spec{}, Spec{.zero = {true, false}});
  expect(Shape{17}, Shape{17}, Spec{.zero = {true}}, Spec{.zero = {true}});
}

TEST_P(MatmulTest, NegativeStrides) {
  expect(Shape{9, 17}, Shape{17, 5}, Spec{.flip = {true, false}});
  expect(Shape{9, 17}, Shape{17, 5}, Spec{}, Spec{.flip = {false, true}});
  expect(Shape{2, 9, 17}, Shape{2, 17, 5}, Spec{.flip = {true, false, true}},
         Spec{.order = {0, 2, 1}, .flip = {true, true, false}});
}

TEST_P(MatmulTest, EmptyInnerDimensionGivesZeros) {
  // check_matmul fills out with non-zero bytes first, so zeros must be written.
  expect(Shape{5, 0}, Shape{0, 3});
  expect(Shape{2, 5, 0}, Shape{1, 0, 3});
  expect(Shape{0}, Shape{0});
  expect(Shape{0}, Shape{0, 4});
}

TEST_P(MatmulTest, EmptyRowsColumnsAndBatch) {
  expect(Shape{0, 5}, Shape{5, 3});
  expect(Shape{4, 5}, Shape{5, 0});
  expect(Shape{0, 4, 5}, Shape{5, 3});
  expect(Shape{2, 0, 4, 5}, Shape{1, 5, 3});
  expect(Shape{0, 0}, Shape{0, 0});
}

TEST_P(MatmulTest, SmallIntegersAreExact) {
  // Products and sums of small integers are exact in every dtype (below 256), so any rounding
  // beyond the final one, or a lost term, shows.
  MatmulEngine engine;
  const TestTensor a = make_tensor(dtype(), Shape{2, 9, 17}, rng_, {}, Values::kSmallIntegers);
  const TestTensor b = make_tensor(dtype(), Shape{17, 6}, rng_, {}, Values::kSmallIntegers);
  EXPECT_EQ(check_matmul(engine, a, b, 0, true), "");
}

TEST_P(MatmulTest, ThreadCounts) {
  for (int threads : {1, 2, 3}) {
    EXPECT_EQ(check_matmul(engine_, tensor(Shape{130, 70}), tensor(Shape{70, 90}), threads), "");
    EXPECT_EQ(check_matmul(engine_, tensor(Shape{5, 33, 20}), tensor(Shape{20, 9}), threads), "");
  }
}

TEST_P(MatmulTest, ConcurrentCallsFromFourThreads) {
  std::vector<std::string> errors(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(static_cast<std::uint64_t>(t));
      for (int round = 0; round < 6 && errors[static_cast<std::size_t>(t)].empty(); ++round) {
        // Shared shapes (the same cached primitive run at once) and per-thread ones.
        const std::int64_t m = round % 2 ? 33 : 17 + t;
        const TestTensor a = make_tensor(dtype(), Shape{2, m, 40}, rng);
        const TestTensor b = make_tensor(dtype(), Shape{40, 24}, rng, Spec{.order = {1, 0}});
        errors[static_cast<std::size_t>(t)] = check_matmul(engine_, a, b);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (const std::string& e : errors) EXPECT_EQ(e, "");
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, MatmulTest, ::testing::Values(kF32, kF16, kBF16, kI32, kI64),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// Float-only behaviour ------------------------------------------------------------------------

// The sum DotRowsArgs documents, written plainly: element j into lane j % 64 (a product, then a
// sum), then the lanes halved as a tree.
float documented_dot(const float* row, const float* vec, std::int64_t k) {
  float lanes[64] = {};
  for (std::int64_t j = 0; j < k; ++j) {
    const float product = row[j] * vec[j];
    lanes[j % 64] = lanes[j % 64] + product;
  }
  for (int half = 32; half >= 1; half /= 2)
    for (int l = 0; l < half; ++l) lanes[l] = lanes[l] + lanes[l + half];
  return lanes[0];
}

// x @ W^T and W @ x in f32 (a decode step's products) go to the dot-row kernel: no oneDNN
// primitive, the documented order bit for bit on every thread count and every ISA level this
// CPU runs, and within the reference's bound.
TEST(MatmulDotRowsTest, OneRowOrColumnContiguousAlongKIsTheDocumentedSum) {
  std::mt19937_64 rng(5);
  const Spec t{.order = {1, 0}};
  for (std::int64_t k : {1, 5, 63, 64, 65, 130, 768}) {
    for (int threads : {1, 2, 3}) {
      MatmulEngine engine;
      const TestTensor x = make_tensor(kF32, Shape{1, k}, rng);
      const TestTensor w = make_tensor(kF32, Shape{k, 37}, rng, t);  // W^T: columns along k
      EXPECT_EQ(check_matmul(engine, x, w, threads), "");
      const TestTensor rows = make_tensor(kF32, Shape{29, k}, rng);
      const TestTensor v = make_tensor(kF32, Shape{k}, rng);
      EXPECT_EQ(check_matmul(engine, rows, v, threads), "");
      EXPECT_EQ(engine.cached_primitives(), 0u) << "k " << k;

      std::vector<float> out(37);
      engine.run(kF32, x.operand(), w.operand(), out.data(), Shape{1, 37}, threads);
      const auto* xd = static_cast<const float*>(x.data());
      const auto* wd = static_cast<const float*>(w.data());
      for (std::int64_t n = 0; n < 37; ++n)
        ASSERT_EQ(out[static_cast<std::size_t>(n)], documented_dot(wd + n * k, xd, k))
            << "k " << k << ", column " << n << ", " << threads << " threads";
    }
  }
}

TEST(MatmulDotRowsTest, BatchedAttentionScoresAndBroadcastBatches) {
  std::mt19937_64 rng(6);
  MatmulEngine engine;
  const Spec keys_t{.order = {0, 2, 1}};  // k^T of a [heads, T, 64] cache
  EXPECT_EQ(check_matmul(engine, make_tensor(kF32, Shape{12, 1, 64}, rng),
                         make_tensor(kF32, Shape{12, 64, 300}, rng, keys_t)),
            "");
  EXPECT_EQ(check_matmul(engine, make_tensor(kF32, Shape{2, 3, 1, 70}, rng),
                         make_tensor(kF32, Shape{3, 70, 9}, rng, keys_t)),
            "");
  EXPECT_EQ(check_matmul(engine, make_tensor(kF32, Shape{4, 1, 70}, rng, Spec{.zero = {true}}),
                         make_tensor(kF32, Shape{70, 9}, rng, Spec{.order = {1, 0}})),
            "");
  EXPECT_EQ(engine.cached_primitives(), 0u);
}

TEST(MatmulDotRowsTest, EveryIsaLevelGivesTheSameBits) {
  std::mt19937_64 rng(8);
  std::uniform_real_distribution<float> value(-1, 1);
  const std::int64_t k = 200, count = 50, batches = 3;
  std::vector<float> rows(static_cast<std::size_t>(batches * count * k)),
      vec(static_cast<std::size_t>(batches * k));
  for (float& f : rows) f = value(rng);
  for (float& f : vec) f = value(rng);
  const std::vector<std::int64_t> rows_offsets{0, count * k, 2 * count * k},
      vec_offsets{0, k, 2 * k};
  std::vector<float> expected;
  int levels = 0;
  for (int level : {2, 3, 4}) {
    const KernelTable* table = kernel_table_for(level);
    if (!table) continue;
    std::vector<float> out(static_cast<std::size_t>(batches * count));
    DotRowsArgs args;
    args.rows = rows.data();
    args.rows_offsets = rows_offsets.data();
    args.row_stride = k;
    args.count = count;
    args.vec = vec.data();
    args.vec_offsets = vec_offsets.data();
    args.k = k;
    args.batches = batches;
    args.out = out.data();
    args.num_threads = 2;
    table->dot_rows(args);
    ++levels;
    if (expected.empty()) expected = out;
    EXPECT_EQ(out, expected) << table->isa;
    for (std::int64_t i = 0; i < batches * count; ++i)
      ASSERT_EQ(out[static_cast<std::size_t>(i)],
                documented_dot(&rows[static_cast<std::size_t>(i * k)],
                               &vec[static_cast<std::size_t>(i / count * k)], k))
          << table->isa << ", row " << i;
  }
  EXPECT_GE(levels, 1);  // the CPU's own level at least
}

// a = [1, x, x, ..., x] (16 x's), b = ones: the sum 1 + 16x is exact in the dtype, but each x is
// below half an ulp of 1 there, so a running sum kept in the dtype stays 1.
void expect_f32_accumulation(DType dtype, double x) {
  MatmulEngine engine;
  std::mt19937_64 rng(1);
  TestTensor a = make_tensor(dtype, Shape{1, 17}, rng);
  TestTensor b = make_tensor(dtype, Shape{17, 1}, rng);
  for (std::int64_t i = 0; i < 17; ++i) {
    const double v = i == 0 ? 1.0 : x;
    a.values[static_cast<std::size_t>(i)] = v;
    b.values[static_cast<std::size_t>(i)] = 1.0;
    store(dtype, a.storage.data(), i, v, 0);
    store(dtype, b.storage.data(), i, 1.0, 0);
  }
  EXPECT_EQ(check_matmul(engine, a, b, 0, true), "");
}

TEST(MatmulFloatTest, F16AccumulatesInF32) { expect_f32_accumulation(kF16, std::ldexp(1.0, -12)); }
TEST(MatmulFloatTest, BF16AccumulatesInF32) { expect_f32_accumulation(kBF16, std::ldexp(1.0, -9)); }

// 1 + 2^-11 is halfway between two f16 values (1 and 1 + 2^-10): round to even gives 1; and
// 1 + 3 * 2^-11 gives 1 + 2^-9. For bf16 the step is 2^-7.
void expect_round_to_nearest_even(DType dtype, int step_exponent) {
  MatmulEngine engine;
  const double half_step = std::ldexp(1.0, step_exponent - 1);
  for (const auto& [extra, expected] :
       {std::pair{half_step, 1.0}, std::pair{3 * half_step, 1.0 + 4 * half_step}}) {
    std::uint16_t a[2], b[2], out = 0;
    for (int i = 0; i < 2; ++i) {
      const float v = i == 0 ? 1.0f : static_cast<float>(extra);
      a[i] = dtype == kF16 ? core::float_to_half_bits(v) : core::float_to_bf16_bits(v);
      b[i] = dtype == kF16 ? core::float_to_half_bits(1.0f) : core::float_to_bf16_bits(1.0f);
    }
    engine.run(dtype, {a, Shape{2}, {1}}, {b, Shape{2}, {1}}, &out, Shape{}, 0);
    EXPECT_EQ(load_float(dtype, &out, 0), expected) << dtype_name(dtype) << " 1 + " << extra;
  }
}

TEST(MatmulFloatTest, F16RoundsToNearestEven) { expect_round_to_nearest_even(kF16, -10); }
TEST(MatmulFloatTest, BF16RoundsToNearestEven) { expect_round_to_nearest_even(kBF16, -7); }

// Integer-only behaviour ----------------------------------------------------------------------

TEST(MatmulIntegerTest, WrapsAround) {
  MatmulEngine engine;
  constexpr std::int32_t kMax32 = std::numeric_limits<std::int32_t>::max();
  const std::int32_t a32[2] = {kMax32, 2}, b32[2] = {2, kMax32};
  std::int32_t out32 = 0;
  engine.run(kI32, {a32, Shape{2}, {1}}, {b32, Shape{2}, {1}}, &out32, Shape{}, 0);
  EXPECT_EQ(out32, -4);  // 2 * (2^31 - 1) wraps to -2, twice

  constexpr std::int64_t kMin64 = std::numeric_limits<std::int64_t>::min();
  const std::int64_t a64[3] = {kMin64, 3, -1}, b64[3] = {-1, std::int64_t{1} << 62, 5};
  std::int64_t out64 = 0;
  engine.run(kI64, {a64, Shape{3}, {1}}, {b64, Shape{3}, {1}}, &out64, Shape{}, 0);
  // -2^63 * -1 wraps to -2^63; 3 * 2^62 wraps to -2^62; sum wraps to 2^62; minus 5.
  EXPECT_EQ(out64, (std::int64_t{1} << 62) - 5);
}

// The primitive cache ---------------------------------------------------------------------------

TEST(MatmulCacheTest, SameShapeReusesPrimitive) {
  MatmulEngine engine;
  std::mt19937_64 rng(3);
  const TestTensor a = make_tensor(kF32, Shape{8, 16}, rng);
  const TestTensor b = make_tensor(kF32, Shape{16, 4}, rng);
  EXPECT_EQ(engine.cached_primitives(), 0u);
  EXPECT_EQ(check_matmul(engine, a, b, 1), "");
  EXPECT_EQ(engine.cached_primitives(), 1u);
  EXPECT_EQ(check_matmul(engine, a, b, 1), "");
  EXPECT_EQ(engine.cached_primitives(), 1u);
  // Same shapes, other strides: another primitive.
  const TestTensor bt = make_tensor(kF32, Shape{16, 4}, rng, Spec{.order = {1, 0}});
  EXPECT_EQ(check_matmul(engine, a, bt, 1), "");
  EXPECT_EQ(engine.cached_primitives(), 2u);
  // Same dimensions, other batch strides (a gap between matrices) or broadcasting: others again.
  const TestTensor a3 = make_tensor(kF32, Shape{3, 8, 16}, rng);
  const TestTensor a3_gap = make_tensor(kF32, Shape{3, 8, 16}, rng, Spec{.step = {2, 1, 1}});
  const TestTensor a3_expanded = make_tensor(kF32, Shape{3, 8, 16}, rng, Spec{.zero = {true}});
  for (const TestTensor* x : {&a3, &a3_gap, &a3_expanded, &a3})
    EXPECT_EQ(check_matmul(engine, *x, b, 1), "");
  EXPECT_EQ(engine.cached_primitives(), 5u);
  // Integers use no primitive; empty products neither.
  const TestTensor ai = make_tensor(kI32, Shape{8, 16}, rng);
  const TestTensor bi = make_tensor(kI32, Shape{16, 4}, rng);
  EXPECT_EQ(check_matmul(engine, ai, bi, 1), "");
  EXPECT_EQ(check_matmul(engine, make_tensor(kF32, Shape{8, 0}, rng),
                         make_tensor(kF32, Shape{0, 4}, rng), 1),
            "");
  EXPECT_EQ(engine.cached_primitives(), 5u);
}

TEST(MatmulCacheTest, StaysAtItsBound) {
  constexpr std::size_t kBound = 256;  // OnednnMatmul::kMaxCachedPrimitives
  MatmulEngine engine;
  std::mt19937_64 rng(4);
  const TestTensor b = make_tensor(kF32, Shape{3, 2}, rng);
  for (std::int64_t m = 1; m <= static_cast<std::int64_t>(kBound) + 20; ++m) {
    const std::string error = check_matmul(engine, make_tensor(kF32, Shape{m, 3}, rng), b, 1);
    ASSERT_EQ(error, "");
    EXPECT_EQ(engine.cached_primitives(),
              std::min<std::size_t>(static_cast<std::size_t>(m), kBound));
  }
  // The first shapes were evicted (least recently used); running them again still works.
  EXPECT_EQ(check_matmul(engine, make_tensor(kF32, Shape{1, 3}, rng), b, 1), "");
  EXPECT_EQ(engine.cached_primitives(), kBound);
}

// Which plan each layout gets, read from the cache log: layouts oneDNN's GEMM kernels read are
// not copied, and no product runs on oneDNN's reference loop ("ref:any").
class MatmulPlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_mask_ = core::detail::g_log_mask.load();
    core::set_log_mask(1u << static_cast<unsigned>(core::LogChannel::kCache));
  }
  void TearDown() override { core::set_log_mask(saved_mask_); }

  // The log line of the plan made for a @ b (a fresh engine, so a plan is always made).
  std::string plan(DType dtype, const Shape& a, const Shape& b, const Spec& sa = {},
                   const Spec& sb = {}) {
    MatmulEngine engine;
    const TestTensor ta = make_tensor(dtype, a, rng_, sa), tb = make_tensor(dtype, b, rng_, sb);
    ::testing::internal::CaptureStderr();
    const std::string error = check_matmul(engine, ta, tb);
    const std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(error, "");
    EXPECT_NE(log.find("matmul plan"), std::string::npos) << log;
    EXPECT_EQ(log.find("ref:any"), std::string::npos) << log;
    return log;
  }
  bool copies(const std::string& log, char operand) {
    return log.find(std::string("copies ") + operand) != std::string::npos;
  }

  std::uint32_t saved_mask_ = 0;
  std::mt19937_64 rng_{7};
};

TEST_F(MatmulPlanTest, ReadableLayoutsAreNotCopied) {
  const Spec t{.order = {1, 0}}, rows2{.step = {2, 1}};
  for (const std::string& log :
       {plan(kF32, Shape{9, 17}, Shape{17, 5}), plan(kF32, Shape{9, 17}, Shape{17, 5}, t, t),
        plan(kF32, Shape{9, 17}, Shape{17, 5}, rows2, rows2), plan(kF32, Shape{17}, Shape{17, 5}),
        plan(kF32, Shape{9, 17}, Shape{17}, t),
        plan(kF32, Shape{17}, Shape{17}, Spec{.step = {2}}, Spec{.step = {3}}),
        // (A b of its own per matrix, with a's rows contiguous, runs in the library's batched
        // GEMM where the CPU has FMA, a broadcast over the batch too: matmul_batched_gemm_test.
        // These share b, so that oneDNN reads a's batch layouts.)
        plan(kF32, Shape{2, 1, 9, 17}, Shape{1, 17, 5}),
        plan(kF32, Shape{3, 9, 17}, Shape{17, 5}, Spec{.step = {2, 1, 1}})}) {
    EXPECT_FALSE(copies(log, 'a')) << log;
    EXPECT_FALSE(copies(log, 'b')) << log;
  }
}

TEST_F(MatmulPlanTest, UnreadableLayoutsCopyOnlyThatOperand) {
  const std::string columns2 = plan(kF32, Shape{9, 17}, Shape{17, 5}, Spec{.step = {1, 2}});
  EXPECT_TRUE(copies(columns2, 'a') && !copies(columns2, 'b')) << columns2;
  const std::string zero = plan(kF32, Shape{9, 17}, Shape{17, 5}, {}, Spec{.zero = {false, true}});
  EXPECT_TRUE(!copies(zero, 'a') && copies(zero, 'b')) << zero;
  const std::string flipped = plan(kF32, Shape{9, 17}, Shape{17, 5}, Spec{.flip = {true, false}});
  EXPECT_TRUE(copies(flipped, 'a') && !copies(flipped, 'b')) << flipped;
}

TEST_F(MatmulPlanTest, HalfPrecisionNeverUsesTheReferenceLoop) {
  // bf16 runs in oneDNN where the CPU has bf16 kernels and f16 on AVX512-FP16 CPUs; otherwise
  // both go via f32. Either way, not through oneDNN's naive loop.
  for (DType dtype : {kF16, kBF16}) {
    plan(dtype, Shape{9, 17}, Shape{17, 5});
    plan(dtype, Shape{9, 17}, Shape{17}, Spec{.order = {1, 0}});
    plan(dtype, Shape{3, 9, 17}, Shape{3, 17, 5}, Spec{.order = {1, 2, 0}});
  }
}

// Errors -----------------------------------------------------------------------------------------

TEST(MatmulErrorTest, BoolIsRejectedNamingTheCall) {
  MatmulEngine engine;
  const bool a[2] = {true, false}, b[2] = {true, true};
  bool out = false;
  try {
    engine.run(kBool, {a, Shape{2}, {1}}, {b, Shape{2}, {1}}, &out, Shape{}, 0);
    FAIL() << "expected DTypeError";
  } catch (const DTypeError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("matmul"), std::string::npos) << what;
    EXPECT_NE(what.find("bool"), std::string::npos) << what;
    EXPECT_NE(what.find("[2]"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace streamfuse::backends::cpu
