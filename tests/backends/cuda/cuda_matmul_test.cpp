// CudaMatmul: which layouts cuBLAS reads as they are (no device needed), and products of every
// shape class, broadcast, stride pattern and float dtype against a reference computed here.
//
// CTest runs the products over the emulated driver with STREAMFUSE_CUBLAS naming fake_cublas, a
// host stand-in that computes what cuBLAS documents for the arguments it gets: so a wrong mapping
// of a row-major product onto cuBLAS's column-major arguments gives wrong numbers here. The
// fake's counters also show how many calls a batch took and which math mode a handle has. On a
// machine with a GPU, run the binary without those variables to test the real cuBLAS.
//
// Operands hold small integers, so every partial sum is exact in f32 and every result exact in
// f16 and bf16: results compare bitwise whatever order cuBLAS sums in.
#include "backends/cuda/cuda_matmul.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backends/cuda/context.h"
#include "backends/cuda/cublas_api.h"
#include "backends/cuda/devices.h"
#include "backends/cuda/driver_api.h"
#include "core/float16.h"
#include "streamfuse/error.h"

namespace streamfuse::backends::cuda {
namespace {

using Strides = std::array<std::int64_t, kMaxRank>;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

bool readable(Shape shape, Strides strides) {
  return CudaMatmul::reads_directly(MatmulOperand{nullptr, shape, strides});
}

// ---- reads_directly: no device needed ---------------------------------------------------------

TEST(CudaMatmulReadsDirectly, RowAndColumnMajorMatricesWithAnyLeadingDimension) {
  EXPECT_TRUE(readable({4, 5}, {5, 1}));
  EXPECT_TRUE(readable({4, 5}, {1, 4}));  // a transposed [5, 4]
  EXPECT_TRUE(readable({4, 5}, {8, 1}));  // columns 0-4 of a [4, 8]
  EXPECT_TRUE(readable({4, 5}, {1, 6}));  // rows 0-3 of a transposed [5, 6]
}

TEST(CudaMatmulReadsDirectly, NotMatricesWithoutAUnitStrideOrWithOverlappingColumns) {
  EXPECT_FALSE(readable({4, 5}, {10, 2}));  // every other column
  EXPECT_FALSE(readable({3, 3}, {1, 1}));   // sliding windows: ld 1 < 3 rows
  EXPECT_FALSE(readable({4, 5}, {4, 1}));   // rows overlap
  EXPECT_FALSE(readable({4, 5}, {0, 1}));   // one row expanded to four
  EXPECT_FALSE(readable({4, 5}, {1, 0}));   // one column expanded to five
  EXPECT_FALSE(readable({4, 5}, {-5, 1}));  // rows reversed
}

TEST(CudaMatmulReadsDirectly, StridesOfSizeOneDimensionsDoNotMatter) {
  EXPECT_TRUE(readable({1, 5}, {0, 1}));
  EXPECT_TRUE(readable({1, 5}, {123, 3}));  // a strided row
  EXPECT_TRUE(readable({5, 1}, {1, 0}));
  EXPECT_TRUE(readable({5, 1}, {7, -2}));  // a strided column
  EXPECT_TRUE(readable({1, 1}, {0, 0}));
}

TEST(CudaMatmulReadsDirectly, VectorsWithAPositiveStride) {
  EXPECT_TRUE(readable({5}, {1}));
  EXPECT_TRUE(readable({5}, {3}));
  EXPECT_TRUE(readable({1}, {0}));
  EXPECT_FALSE(readable({5}, {0}));  // a scalar expanded
  EXPECT_FALSE(readable({5}, {-1}));
}

TEST(CudaMatmulReadsDirectly, BatchDimensionsThatCollapseToOneStride) {
  EXPECT_TRUE(readable({2, 3, 4, 5}, {60, 20, 5, 1}));
  EXPECT_TRUE(readable({2, 3, 4, 5}, {0, 20, 5, 1}));     // broadcast along the first
  EXPECT_TRUE(readable({2, 3, 4, 5}, {60, 0, 5, 1}));     // and along the second
  EXPECT_TRUE(readable({2, 3, 4, 5}, {0, 0, 5, 1}));      // one matrix for all
  EXPECT_TRUE(readable({2, 3, 4, 5}, {120, 40, 1, 4}));   // transposed matrices, spaced out
  EXPECT_FALSE(readable({2, 3, 4, 5}, {20, 40, 5, 1}));   // batch dimensions swapped
  EXPECT_FALSE(readable({2, 3, 4, 5}, {120, 20, 5, 1}));  // every other block of three
  EXPECT_FALSE(readable({3, 4, 5}, {-20, 5, 1}));
}

TEST(CudaMatmulReadsDirectly, EmptyOperandsAreReadAndScalarsAreNot) {
  EXPECT_TRUE(readable({0, 5}, {10, 2}));
  EXPECT_TRUE(readable({3, 0, 5}, {-1, 0, 0}));
  EXPECT_FALSE(readable(Shape{}, {}));
}

// ---- products on a device ---------------------------------------------------------------------

// An operand on the host: `storage` read as `shape` with `strides`.
struct HostOperand {
  Shape shape;
  Strides strides{};
  std::vector<float> storage;

  float at(const std::vector<std::int64_t>& index) const {
    std::int64_t offset = 0;
    for (std::size_t d = 0; d < index.size(); ++d) offset += index[d] * strides[d];
    return storage[static_cast<std::size_t>(offset)];
  }
};

// `shape` laid out with `strides` (non-negative) over storage holding integers in [-2, 2], or
// uniform floats in [-1, 1].
HostOperand strided(Shape shape, Strides strides, std::uint32_t seed, bool integers = true) {
  std::int64_t span = 1;
  for (int d = 0; d < shape.rank(); ++d)
    span += (shape[d] - 1) * strides[static_cast<std::size_t>(d)];
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> small(-2, 2);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> storage(static_cast<std::size_t>(std::max<std::int64_t>(span, 1)));
  for (float& v : storage) v = integers ? static_cast<float>(small(rng)) : uniform(rng);
  return {shape, strides, std::move(storage)};
}

Strides row_major(const Shape& shape) {
  Strides s{};
  std::int64_t stride = 1;
  for (int d = shape.rank() - 1; d >= 0; --d) {
    s[static_cast<std::size_t>(d)] = stride;
    stride *= std::max<std::int64_t>(shape[d], 1);
  }
  return s;
}

HostOperand contiguous(Shape shape, std::uint32_t seed, bool integers = true) {
  return strided(shape, row_major(shape), seed, integers);
}

// `shape` whose last two dimensions are stored transposed (as x.transpose(-1, -2) makes).
HostOperand transposed(Shape shape, std::uint32_t seed) {
  const int r = shape.rank();
  std::vector<std::int64_t> dims(shape.begin(), shape.end());
  std::swap(dims[r - 2], dims[r - 1]);
  Strides s = row_major(Shape(std::span<const std::int64_t>(dims)));
  std::swap(s[r - 2], s[r - 1]);
  return strided(shape, s, seed);
}

// NumPy's matmul of the host operands, summed in double.
std::vector<double> reference(const HostOperand& a, const HostOperand& b, Shape& out_shape) {
  const int ra = a.shape.rank(), rb = b.shape.rank();
  const std::int64_t k = a.shape[ra - 1];
  const std::int64_t m = ra >= 2 ? a.shape[ra - 2] : 1, n = rb >= 2 ? b.shape[rb - 1] : 1;
  const int batch_rank = std::max(ra, rb) - 2 > 0 ? std::max(ra, rb) - 2 : 0;
  std::vector<std::int64_t> batch(static_cast<std::size_t>(batch_rank), 1), dims;
  for (int d = 0; d < batch_rank; ++d) {
    const int da = d - (batch_rank - (ra - 2)), db = d - (batch_rank - (rb - 2));
    if (da >= 0) batch[d] = std::max(batch[d], a.shape[da]);
    if (db >= 0) batch[d] = std::max(batch[d], b.shape[db]);
  }
  dims = batch;
  if (ra >= 2) dims.push_back(m);
  if (rb >= 2) dims.push_back(n);
  out_shape = Shape(std::span<const std::int64_t>(dims));

  std::int64_t count = 1;
  for (std::int64_t s : batch) count *= s;
  std::vector<double> out;
  std::vector<std::int64_t> bi(batch.size(), 0);
  for (std::int64_t p = 0; p < count; ++p) {
    for (std::int64_t i = 0, rest = p; i < batch_rank; ++i) {
      bi[batch_rank - 1 - i] = rest % batch[batch_rank - 1 - i];
      rest /= batch[batch_rank - 1 - i];
    }
    // The operand's own index for batch index `bi` and matrix position (r, c).
    auto index = [&](const HostOperand& x, std::int64_t r, std::int64_t c, bool is_a) {
      const int rx = x.shape.rank();
      std::vector<std::int64_t> idx;
      for (int d = 0; d < rx - 2; ++d)
        idx.push_back(x.shape[d] == 1 ? 0 : bi[d + batch_rank - (rx - 2)]);
      if (rx == 1) return std::vector<std::int64_t>{is_a ? c : r};
      idx.push_back(r);
      idx.push_back(c);
      return idx;
    };
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (std::int64_t l = 0; l < k; ++l)
          sum += double{a.at(index(a, i, l, true))} * double{b.at(index(b, l, j, false))};
        out.push_back(sum);
      }
  }
  return out;
}

std::vector<std::uint8_t> encode(const std::vector<float>& values, DType dtype) {
  std::vector<std::uint8_t> bytes(values.size() * element_size(dtype));
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (dtype == kF32) {
      std::memcpy(&bytes[i * 4], &values[i], 4);
      continue;
    }
    const std::uint16_t h =
        dtype == kF16 ? core::float_to_half_bits(values[i]) : core::float_to_bf16_bits(values[i]);
    std::memcpy(&bytes[i * 2], &h, 2);
  }
  return bytes;
}

float decode(const std::uint8_t* p, DType dtype) {
  if (dtype == kF32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  return dtype == kF16 ? core::half_bits_to_float(h) : core::bf16_bits_to_float(h);
}

float round_to(double x, DType dtype) {
  const auto f = static_cast<float>(x);
  return dtype == kF16    ? core::half_bits_to_float(core::float_to_half_bits(f))
         : dtype == kBF16 ? core::bf16_bits_to_float(core::float_to_bf16_bits(f))
                          : f;
}

// The test hooks of fake_cublas (nullptr under the real cuBLAS): the loader hands back the
// handle CudaMatmul's loading made.
struct FakeHooks {
  long long (*stat)(const char*);
  void (*reset_calls)();
  void (*fail_next)(int);
};

const FakeHooks* fake_hooks() {
  static const FakeHooks* hooks = []() -> const FakeHooks* {
    const char* path = std::getenv("STREAMFUSE_CUBLAS");
    void* lib = path && Cublas::get() ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : nullptr;
    if (!lib) return nullptr;
    auto* h = new FakeHooks{
        reinterpret_cast<long long (*)(const char*)>(dlsym(lib, "sf_fake_cublas_stat")),
        reinterpret_cast<void (*)()>(dlsym(lib, "sf_fake_cublas_reset_calls")),
        reinterpret_cast<void (*)(int)>(dlsym(lib, "sf_fake_cublas_fail_next"))};
    return h->stat && h->reset_calls && h->fail_next ? h : nullptr;
  }();
  return hooks;
}

constexpr DType kFloatDTypes[] = {kF32, kF16, kBF16};

// cuda:0 with a stream; products through CudaMatmul compared with reference().
class CudaMatmulOnDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (device_count() == 0)
      GTEST_SKIP() << "no CUDA device: "
                   << (Driver::get() ? "the driver sees none" : Driver::unavailable_reason());
    if (!Cublas::get() && !std::getenv("SF_EXPECT_NO_CUBLAS"))
      GTEST_SKIP() << Cublas::unavailable_reason();
    context_ = DeviceContext::open(0);
    context_->make_current();
    d_ = &context_->driver();
    stream_ = make_stream();
    matmul_ = std::make_unique<CudaMatmul>(context_);
    if (fake_hooks()) fake_hooks()->reset_calls();
  }

  void TearDown() override {
    matmul_.reset();  // its handles use the streams
    if (!d_) return;
    for (CUdeviceptr p : buffers_) d_->mem_free(p);
    for (CUstream s : streams_) d_->stream_destroy(s);
  }

  CUstream make_stream() {
    CUstream s = nullptr;
    d_->check(d_->stream_create(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    streams_.push_back(s);
    return s;
  }

  // A device buffer holding `bytes` (at least 16, so that empty operands get an address too),
  // copied before it returns: the fake cuBLAS reads at call time.
  CUdeviceptr upload(const std::vector<std::uint8_t>& bytes) {
    CUdeviceptr p = 0;
    d_->check(d_->mem_alloc(&p, std::max<std::size_t>(bytes.size(), 16)), "cuMemAlloc");
    buffers_.push_back(p);
    if (!bytes.empty())
      d_->check(d_->memcpy_htod_async(p, bytes.data(), bytes.size(), stream_), "cuMemcpyHtoD");
    d_->check(d_->stream_synchronize(stream_), "cuStreamSynchronize");
    return p;
  }

  MatmulOperand on_device(const HostOperand& x, DType dtype) {
    return {reinterpret_cast<const void*>(upload(encode(x.storage, dtype))), x.shape, x.strides};
  }

  // Runs a @ b on `stream` into a buffer filled with 0xFF bytes (NaN in every float dtype) and
  // returns it; `out_shape` is the product's.
  std::vector<float> product(DType dtype, const HostOperand& a, const HostOperand& b,
                             const Shape& out_shape, CUstream stream) {
    const MatmulOperand da = on_device(a, dtype), db = on_device(b, dtype);
    const auto bytes = static_cast<std::size_t>(out_shape.numel()) * element_size(dtype);
    const CUdeviceptr out = upload(std::vector<std::uint8_t>(bytes, 0xFF));
    matmul_->run(dtype, da, db, reinterpret_cast<void*>(out), out_shape, stream);
    std::vector<std::uint8_t> host(bytes);
    if (bytes) d_->check(d_->memcpy_dtoh_async(host.data(), out, bytes, stream), "cuMemcpyDtoH");
    d_->check(d_->stream_synchronize(stream), "cuStreamSynchronize");
    std::vector<float> values(static_cast<std::size_t>(out_shape.numel()));
    for (std::size_t i = 0; i < values.size(); ++i)
      values[i] = decode(&host[i * element_size(dtype)], dtype);
    return values;
  }

  // a @ b in every float dtype equals the reference bit for bit.
  void expect_product(const HostOperand& a, const HostOperand& b) {
    Shape out_shape;
    const std::vector<double> want = reference(a, b, out_shape);
    for (DType dtype : kFloatDTypes) {
      const std::vector<float> got = product(dtype, a, b, out_shape, stream_);
      ASSERT_EQ(got.size(), want.size());
      std::size_t wrong = 0, first = 0;
      for (std::size_t i = 0; i < got.size(); ++i)
        if (got[i] != round_to(want[i], dtype) && wrong++ == 0) first = i;
      EXPECT_EQ(wrong, 0u) << dtype_name(dtype) << " " << a.shape.to_string() << " @ "
                           << b.shape.to_string() << ": first wrong element " << first << " is "
                           << got[first] << ", not " << want[first];
    }
  }

  long long stat(const char* name) const { return fake_hooks()->stat(name); }

  std::shared_ptr<DeviceContext> context_;
  const Driver* d_ = nullptr;
  CUstream stream_ = nullptr;
  std::unique_ptr<CudaMatmul> matmul_;
  std::vector<CUdeviceptr> buffers_;
  std::vector<CUstream> streams_;
};

TEST_F(CudaMatmulOnDevice, VectorsAndMatrices) {
  expect_product(contiguous({7}, 1), contiguous({7}, 2));
  expect_product(contiguous({5}, 3), contiguous({5, 3}, 4));
  expect_product(contiguous({4, 5}, 5), contiguous({5}, 6));
  expect_product(contiguous({4, 5}, 7), contiguous({5, 3}, 8));
  expect_product(contiguous({1, 1}, 9), contiguous({1, 1}, 10));
  expect_product(contiguous({33, 17}, 11), contiguous({17, 65}, 12));
}

TEST_F(CudaMatmulOnDevice, TransposedStridedAndSlicedOperands) {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      expect_product(ta ? transposed({4, 5}, 1) : contiguous({4, 5}, 1),
                     tb ? transposed({5, 3}, 2) : contiguous({5, 3}, 2));
  expect_product(strided({4, 5}, {8, 1}, 3), strided({5, 3}, {1, 7}, 4));  // leading dims
  expect_product(strided({5}, {3}, 5), strided({5, 3}, {4, 1}, 6));        // strided vectors
  expect_product(strided({4, 5}, {1, 4}, 7), strided({5}, {2}, 8));
  expect_product(strided({5}, {2}, 9), strided({5}, {3}, 10));
  expect_product(strided({1, 5}, {99, 2}, 11), strided({5, 1}, {3, 0}, 12));  // a row, a column
}

TEST_F(CudaMatmulOnDevice, BatchesBroadcastAndTransposed) {
  expect_product(contiguous({3, 4, 5}, 1), contiguous({3, 5, 2}, 2));
  expect_product(contiguous({2, 1, 4, 5}, 3), contiguous({3, 5, 6}, 4));
  expect_product(contiguous({5}, 5), contiguous({3, 5, 2}, 6));
  expect_product(contiguous({3, 4, 5}, 7), contiguous({5}, 8));
  expect_product(contiguous({3, 4, 5}, 9), contiguous({5, 2}, 10));
  expect_product(strided({3, 4, 5}, {0, 5, 1}, 11), contiguous({3, 5, 2}, 12));  // expanded
  expect_product(strided({3, 4, 5}, {20, 1, 4}, 13), transposed({3, 5, 2}, 14));
  expect_product(strided({2, 3, 4, 5}, {120, 40, 1, 4}, 15), contiguous({3, 5, 6}, 16));
  expect_product(strided({2, 3, 4, 5}, {0, 0, 5, 1}, 17), contiguous({2, 3, 5, 1}, 18));
}

TEST_F(CudaMatmulOnDevice, UniformBatchesTakeOneCallAndOthersOnePerGroup) {
  if (!fake_hooks()) GTEST_SKIP() << "counts calls through fake_cublas";
  auto calls = [&](const HostOperand& a, const HostOperand& b) {
    fake_hooks()->reset_calls();
    Shape out_shape;
    reference(a, b, out_shape);
    product(kF32, a, b, out_shape, stream_);
    return std::vector<long long>{stat("gemm_calls"), stat("batched_calls"),
                                  stat("batched_matrices")};
  };
  using Calls = std::vector<long long>;
  EXPECT_EQ(calls(contiguous({4, 5}, 1), contiguous({5, 3}, 2)), (Calls{1, 0, 0}));
  EXPECT_EQ(calls(contiguous({3, 4, 5}, 1), contiguous({3, 5, 2}, 2)), (Calls{0, 1, 3}));
  // Two batch dimensions that nest evenly are one.
  EXPECT_EQ(calls(contiguous({2, 3, 4, 5}, 1), contiguous({2, 3, 5, 6}, 2)), (Calls{0, 1, 6}));
  // `b` broadcast across the batch: stride 0.
  EXPECT_EQ(calls(contiguous({2, 3, 4, 5}, 1), contiguous({5, 6}, 2)), (Calls{0, 1, 6}));
  // Each operand broadcasts along another dimension: one call per index of the smaller one.
  EXPECT_EQ(calls(contiguous({6, 1, 3, 4}, 1), contiguous({5, 4, 2}, 2)), (Calls{0, 5, 30}));
  EXPECT_EQ(calls(contiguous({5, 1, 3, 4}, 1), contiguous({6, 4, 2}, 2)), (Calls{0, 5, 30}));
}

TEST_F(CudaMatmulOnDevice, AnEmptySumIsZeroAndAnEmptyProductWritesNothing) {
  for (DType dtype : kFloatDTypes) {
    for (const std::vector<float>& zeros :
         {product(dtype, contiguous({3, 0}, 1), contiguous({0, 4}, 2), {3, 4}, stream_),
          product(dtype, contiguous({2, 3, 0}, 1), contiguous({0}, 2), {2, 3}, stream_)})
      for (float v : zeros) EXPECT_EQ(v, 0.0f) << dtype_name(dtype);
    EXPECT_TRUE(
        product(dtype, contiguous({0, 5}, 1), contiguous({5, 3}, 2), {0, 3}, stream_).empty());
    EXPECT_TRUE(
        product(dtype, contiguous({2, 0, 4, 5}, 1), contiguous({5, 3}, 2), {2, 0, 4, 3}, stream_)
            .empty());
  }
  if (fake_hooks()) {
    EXPECT_EQ(stat("gemm_calls") + stat("batched_calls"), 0);
  }
  EXPECT_EQ(matmul_->handles(), 0u);  // no cuBLAS call: no handle either
}

TEST_F(CudaMatmulOnDevice, F32ProductsOfArbitraryValuesMatchWithinF32Rounding) {
  // TF32 keeps 10 mantissa bits: its errors are ~1e-3 of sum |a b|, two orders above this bound.
  const HostOperand a = contiguous({3, 33, 47}, 1, false), b = contiguous({47, 29}, 2, false);
  Shape out_shape;
  const std::vector<double> want = reference(a, b, out_shape);
  HostOperand abs_a = a, abs_b = b;
  for (float& v : abs_a.storage) v = std::fabs(v);
  for (float& v : abs_b.storage) v = std::fabs(v);
  const std::vector<double> bound = reference(abs_a, abs_b, out_shape);
  const std::vector<float> got = product(kF32, a, b, out_shape, stream_);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-5 * bound[i]) << "element " << i;
  if (fake_hooks()) {
    EXPECT_EQ(stat("last_compute_type"), CUBLAS_COMPUTE_32F);
    EXPECT_EQ(stat("last_math_mode"),
              CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
  }
}

TEST_F(CudaMatmulOnDevice, OneHandlePerStreamUntilReleased) {
  const long long live = fake_hooks() ? stat("live_handles") : 0;
  const CUstream other = make_stream();
  const HostOperand a = contiguous({4, 5}, 1), b = contiguous({5, 3}, 2);
  for (CUstream s : {stream_, other, stream_, other}) product(kF32, a, b, {4, 3}, s);
  EXPECT_EQ(matmul_->handles(), 2u);
  if (fake_hooks()) {
    EXPECT_EQ(stat("live_handles"), live + 2);
  }
  matmul_->release_stream(other);
  matmul_->release_stream(other);  // no handle left: nothing to do
  EXPECT_EQ(matmul_->handles(), 1u);
  matmul_.reset();
  if (fake_hooks()) {
    EXPECT_EQ(stat("live_handles"), live);
  }
}

TEST_F(CudaMatmulOnDevice, ThreadsOnTheirOwnStreamsRunProductsAtOnce) {
  const HostOperand a = contiguous({2, 6, 7}, 1), b = contiguous({7, 5}, 2);
  Shape out_shape;
  const std::vector<double> want = reference(a, b, out_shape);
  const MatmulOperand da = on_device(a, kF32), db = on_device(b, kF32);
  const auto bytes = static_cast<std::size_t>(out_shape.numel()) * 4;
  std::vector<CUstream> streams = {make_stream(), make_stream()};
  std::vector<CUdeviceptr> outs = {upload(std::vector<std::uint8_t>(bytes)),
                                   upload(std::vector<std::uint8_t>(bytes))};
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      context_->make_current();
      for (int i = 0; i < 20; ++i)
        matmul_->run(kF32, da, db, reinterpret_cast<void*>(outs[t]), out_shape, streams[t]);
    });
  for (std::thread& t : threads) t.join();
  for (std::size_t t = 0; t < 2; ++t) {
    std::vector<float> got(want.size());
    d_->check(d_->memcpy_dtoh_async(got.data(), outs[t], bytes, streams[t]), "cuMemcpyDtoH");
    d_->check(d_->stream_synchronize(streams[t]), "cuStreamSynchronize");
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want[i]);
  }
  EXPECT_EQ(matmul_->handles(), 2u);
}

// Operands copied in, the product, and the result copied out, queued on one stream with no
// synchronization in between: each step sees the one before, as the backend relies on.
TEST_F(CudaMatmulOnDevice, ProductsRunInStreamOrder) {
  const HostOperand a = contiguous({16, 24}, 1), b = contiguous({24, 8}, 2);
  Shape out_shape;
  const std::vector<double> want = reference(a, b, out_shape);
  const std::vector<std::uint8_t> ha = encode(a.storage, kF32), hb = encode(b.storage, kF32);
  std::vector<float> got(want.size());
  CUdeviceptr da = 0, db = 0, dc = 0;
  for (auto [p, bytes] : {std::pair{&da, ha.size()}, {&db, hb.size()}, {&dc, got.size() * 4}}) {
    d_->check(d_->mem_alloc(p, bytes), "cuMemAlloc");
    buffers_.push_back(*p);
  }
  d_->check(d_->memcpy_htod_async(da, ha.data(), ha.size(), stream_), "cuMemcpyHtoDAsync");
  d_->check(d_->memcpy_htod_async(db, hb.data(), hb.size(), stream_), "cuMemcpyHtoDAsync");
  matmul_->run(kF32, {reinterpret_cast<const void*>(da), a.shape, a.strides},
               {reinterpret_cast<const void*>(db), b.shape, b.strides}, reinterpret_cast<void*>(dc),
               out_shape, stream_);
  d_->check(d_->memcpy_dtoh_async(got.data(), dc, got.size() * 4, stream_), "cuMemcpyDtoHAsync");
  d_->check(d_->stream_synchronize(stream_), "cuStreamSynchronize");
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << "element " << i;
}

TEST_F(CudaMatmulOnDevice, OtherDTypesAndUnreadableOperandsAreInternalErrors) {
  const MatmulOperand a{nullptr, {2, 3}, {3, 1}}, b{nullptr, {3, 4}, {4, 1}};
  try {
    matmul_->run(kI32, a, b, nullptr, {2, 4}, stream_);
    ADD_FAILURE() << "an i32 product reached cuBLAS";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "internal: matmul of i32 operands [2, 3] and [3, 4]"))
        << e.what();
  }
  const MatmulOperand every_other{nullptr, {2, 3}, {6, 2}};
  try {
    matmul_->run(kF32, every_other, b, nullptr, {2, 4}, stream_);
    ADD_FAILURE() << "an operand cuBLAS cannot read reached it";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "internal: ")) << e.what();
    EXPECT_TRUE(contains(e.what(), "contiguous copy")) << e.what();
  }
}

TEST_F(CudaMatmulOnDevice, ACublasFailureNamesTheProductTheCallAndTheStatus) {
  if (!fake_hooks()) GTEST_SKIP() << "injects the failure through fake_cublas";
  fake_hooks()->fail_next(CUBLAS_STATUS_EXECUTION_FAILED);
  try {
    product(kF32, contiguous({2, 3}, 1), contiguous({3, 4}, 2), {2, 4}, stream_);
    ADD_FAILURE() << "the failure was not reported";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "matmul of f32 operands [2, 3] and [3, 4]: cublasGemmEx_64 failed: "
                 "CUBLAS_STATUS_EXECUTION_FAILED (the function failed to launch on the GPU)");
  }
}

// Run by CTest with STREAMFUSE_CUBLAS naming a missing library and SF_EXPECT_NO_CUBLAS set.
TEST_F(CudaMatmulOnDevice, WithoutCublasFloatProductsSayWhyAndEmptySumsStillWork) {
  if (!std::getenv("SF_EXPECT_NO_CUBLAS")) GTEST_SKIP() << "run by CTest without cuBLAS";
  ASSERT_EQ(Cublas::get(), nullptr);
  try {
    product(kF32, contiguous({2, 3}, 1), contiguous({3, 4}, 2), {2, 4}, stream_);
    ADD_FAILURE() << "expected a DeviceError";
  } catch (const DeviceError& e) {
    EXPECT_EQ(std::string(e.what()),
              "cuda: cannot run matmul of f32 operands [2, 3] and [3, 4] on cuda:0: " +
                  Cublas::unavailable_reason());
  }
  for (float v : product(kF32, contiguous({3, 0}, 1), contiguous({0, 4}, 2), {3, 4}, stream_))
    EXPECT_EQ(v, 0.0f);
}

}  // namespace
}  // namespace streamfuse::backends::cuda
