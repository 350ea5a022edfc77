// Kernels on the emulated GPU: compiled by the emulated NVRTC through the library's loader,
// loaded and launched through its driver table. Launches are asynchronous and ordered as on a
// GPU; a shared-memory reduction with __syncthreads gives the right sums, fast; a source that
// does not compile gives NVRTC's error with the compiler's message.
//
// Some kernels here wait on a gate in device memory that the host opens by writing it directly:
// only the emulator, whose device memory is host memory, allows that. It makes "still running"
// deterministic where a GPU test would have to spin for a while and hope.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <thread>
#include <vector>

#include "streamfuse/error.h"
#include "tests/backends/cuda/emulator/emulator_test_support.h"
#include "tests/backends/cuda/emulator/sanitizers.h"

namespace streamfuse::backends::cuda::emulator::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kGateKernels = R"(
struct GateArgs { const int* gate; int* out; int value; };
// Stores `value` once the host opened the gate.
extern "C" __global__ void __launch_bounds__(256) store_after_gate(const GateArgs a) {
  while (__atomic_load_n(a.gate, __ATOMIC_ACQUIRE) == 0) {
  }
  if (threadIdx.x == 0 && blockIdx.x == 0) *a.out = a.value;
}
struct AddArgs { int* data; int add; };
extern "C" __global__ void __launch_bounds__(256) add(const AddArgs a) {
  if (threadIdx.x == 0 && blockIdx.x == 0) *a.data += a.add;
}
struct IndexArgs { int* out; };
// Every thread writes its linear index where its coordinates say.
extern "C" __global__ void indices(const IndexArgs a) {
  const unsigned block = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  const unsigned thread = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  const unsigned per_block = blockDim.x * blockDim.y * blockDim.z;
  a.out[block * per_block + thread] = (int)(block * per_block + thread);
}
)";

struct GateArgs {
  const int* gate;
  int* out;
  int value;
};
struct AddArgs {
  int* data;
  int add;
};

class EmulatedKernels : public EmulatorTest {
 protected:
  void SetUp() override {
    EmulatorTest::SetUp();
    if (HasFatalFailure()) return;
    module_ = load(kGateKernels);
    ASSERT_NE(module_, nullptr);
    gated_ = function(module_, "store_after_gate");
    add_ = function(module_, "add");
    gate_ = buffer<int>(sizeof(int));
    *gate_ = 0;  // device memory is host memory: the host closes and opens the gate directly
  }
  void TearDown() override {
    open_gate();  // a failed test must not leave a stream spinning
    EmulatorTest::TearDown();
  }
  void open_gate() {
    if (gate_) __atomic_store_n(gate_, 1, __ATOMIC_RELEASE);
  }

  CUmodule module_ = nullptr;
  CUfunction gated_ = nullptr, add_ = nullptr;
  int* gate_ = nullptr;
};

TEST_F(EmulatedKernels, ALaunchRunsAfterTheCallReturnsAndIsSeenOnlyAfterSynchronizing) {
  CUstream s = stream();
  int* out = buffer<int>(sizeof(int));
  int result = -1;
  ASSERT_EQ(launch(gated_, 4, 256, s, GateArgs{gate_, out, 7}), CUDA_SUCCESS);
  ASSERT_EQ(d().memcpy_dtoh_async(&result, address(out), sizeof(int), s), CUDA_SUCCESS);
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(d().stream_query(s), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(result, -1);  // the copy is queued behind the running kernel
  open_gate();
  ASSERT_EQ(d().stream_synchronize(s), CUDA_SUCCESS);
  EXPECT_EQ(result, 7);
  EXPECT_EQ(d().stream_query(s), CUDA_SUCCESS);
}

TEST_F(EmulatedKernels, StreamWaitEventOrdersWorkAcrossStreams) {
  CUstream first = stream(), second = stream();
  CUevent stored = event(), added = event();
  int* data = buffer<int>(sizeof(int));
  int result = -1;
  ASSERT_EQ(launch(gated_, 1, 32, first, GateArgs{gate_, data, 5}), CUDA_SUCCESS);
  ASSERT_EQ(d().event_record(stored, first), CUDA_SUCCESS);
  ASSERT_EQ(d().stream_wait_event(second, stored, 0), CUDA_SUCCESS);
  // Recording `stored` again does not change what `second` waits for.
  ASSERT_EQ(d().event_record(stored, second), CUDA_SUCCESS);
  ASSERT_EQ(launch(add_, 1, 32, second, AddArgs{data, 1}), CUDA_SUCCESS);
  ASSERT_EQ(d().memcpy_dtoh_async(&result, address(data), sizeof(int), second), CUDA_SUCCESS);
  ASSERT_EQ(d().event_record(added, second), CUDA_SUCCESS);
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(d().stream_query(second), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(d().event_query(added), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(result, -1);
  open_gate();
  ASSERT_EQ(d().event_synchronize(added), CUDA_SUCCESS);
  EXPECT_EQ(result, 6);  // 5 stored, then 1 added: never 1 or 5
}

TEST_F(EmulatedKernels, EventsTimeTheWorkBetweenThem) {
  CUstream s = stream();
  CUevent start = event(), end = event();
  int* out = buffer<int>(sizeof(int));
  ASSERT_EQ(d().event_record(start, s), CUDA_SUCCESS);
  ASSERT_EQ(d().event_synchronize(start), CUDA_SUCCESS);
  ASSERT_EQ(launch(gated_, 1, 1, s, GateArgs{gate_, out, 1}), CUDA_SUCCESS);
  ASSERT_EQ(d().event_record(end, s), CUDA_SUCCESS);
  float ms = -1;
  EXPECT_EQ(d().event_elapsed_time(&ms, start, end), CUDA_ERROR_NOT_READY);
  std::this_thread::sleep_for(30ms);
  open_gate();
  ASSERT_EQ(d().event_synchronize(end), CUDA_SUCCESS);
  ASSERT_EQ(d().event_elapsed_time(&ms, start, end), CUDA_SUCCESS);
  EXPECT_GE(ms, 29.0f);
}

TEST_F(EmulatedKernels, LaunchParametersAreCopiedWhenTheLaunchIsQueued) {
  CUstream s = stream();
  int* data = buffer<int>(sizeof(int));
  *data = 10;
  ASSERT_EQ(launch(gated_, 1, 1, s, GateArgs{gate_, buffer<int>(4), 0}), CUDA_SUCCESS);
  AddArgs args{data, 3};
  ASSERT_EQ(launch(add_, 1, 1, s, args), CUDA_SUCCESS);
  args.add = 100;  // after the call: the queued launch keeps its own copy
  open_gate();
  ASSERT_EQ(d().stream_synchronize(s), CUDA_SUCCESS);
  EXPECT_EQ(*data, 13);
}

TEST_F(EmulatedKernels, TheLegacyDefaultStreamRunsWorkBeforeReturning) {
  int* data = buffer<int>(sizeof(int));
  *data = 1;
  ASSERT_EQ(launch(add_, 1, 1, nullptr, AddArgs{data, 2}), CUDA_SUCCESS);
  EXPECT_EQ(*data, 3);
}

TEST_F(EmulatedKernels, GridsAndBlocksOfThreeDimensionsCoverEveryThread) {
  CUstream s = stream();
  constexpr unsigned kThreads = 2 * 3 * 2 * (4 * 2 * 3);
  int* out = buffer<int>(kThreads * sizeof(int));
  void* params[] = {&out};
  ASSERT_EQ(
      d().launch_kernel(function(module_, "indices"), 2, 3, 2, 4, 2, 3, 0, s, params, nullptr),
      CUDA_SUCCESS);
  ASSERT_EQ(d().stream_synchronize(s), CUDA_SUCCESS);
  for (unsigned k = 0; k < kThreads; ++k) ASSERT_EQ(out[k], static_cast<int>(k));
}

TEST_F(EmulatedKernels, LaunchesAndLookupsAreCheckedAsTheDriverChecksThem) {
  CUstream s = stream();
  int* data = buffer<int>(sizeof(int));
  int value = 0;
  ASSERT_EQ(d().func_get_attribute(&value, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, add_),
            CUDA_SUCCESS);
  EXPECT_EQ(value, 256);  // its __launch_bounds__
  EXPECT_EQ(launch(add_, 1, 512, s, AddArgs{data, 1}), CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  EXPECT_EQ(launch(add_, 0, 32, s, AddArgs{data, 1}), CUDA_ERROR_INVALID_VALUE);
  int min_grid = 0, block = 0;
  ASSERT_EQ(d().occupancy_max_potential_block_size(&min_grid, &block, add_, nullptr, 0, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(block, 256);
  EXPECT_GT(min_grid, 0);

  CUfunction f = nullptr;
  EXPECT_EQ(d().module_get_function(&f, module_, "no_such_kernel"), CUDA_ERROR_NOT_FOUND);
  const char garbage[64] = "not an image";
  CUmodule m = nullptr;
  EXPECT_EQ(d().module_load_data_ex(&m, garbage, 0, nullptr, nullptr), CUDA_ERROR_INVALID_IMAGE);

  // A PTX image loads as well; once unloaded its functions are gone.
  CUmodule ptx = load(kGateKernels, /*ptx=*/true);
  ASSERT_NE(ptx, nullptr);
  CUfunction add_ptx = function(ptx, "add");
  modules_.pop_back();
  ASSERT_EQ(d().module_unload(ptx), CUDA_SUCCESS);
  EXPECT_EQ(launch(add_ptx, 1, 1, s, AddArgs{data, 1}), CUDA_ERROR_INVALID_HANDLE);
}

// One partial sum per block: a shared-memory tree reduction, a barrier between its levels.
constexpr const char* kBlockSums = R"(
struct SumArgs { const float* in; float* out; long long n; };
extern "C" __global__ void __launch_bounds__(256) block_sums(const SumArgs a) {
  __shared__ float partial[256];
  const unsigned t = threadIdx.x;
  const long long i = (long long)blockIdx.x * blockDim.x + t;
  partial[t] = i < a.n ? a.in[i] : 0.0f;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (t < half) partial[t] += partial[t + half];
    __syncthreads();
  }
  if (t == 0) a.out[blockIdx.x] = partial[0];
}
)";

struct SumArgs {
  const float* in;
  float* out;
  long long n;
};

TEST_F(EmulatorTest, SyncthreadsReductionOverManyBlocksIsRightAndFast) {
  constexpr unsigned kBlocks = 64, kThreads = 256, kN = kBlocks * kThreads - 100;
  CUstream s = stream();
  CUfunction sums = function(load(kBlockSums), "block_sums");
  std::vector<float> in(kN);
  for (unsigned i = 0; i < kN; ++i) in[i] = static_cast<float>(i % 97);  // exact sums
  float* device_in = buffer<float>(kN * sizeof(float));
  float* device_out = buffer<float>(kBlocks * sizeof(float));
  ASSERT_EQ(d().memcpy_htod_async(address(device_in), in.data(), kN * sizeof(float), s),
            CUDA_SUCCESS);
  ASSERT_EQ(d().stream_synchronize(s), CUDA_SUCCESS);

  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(launch(sums, kBlocks, kThreads, s, SumArgs{device_in, device_out, kN}), CUDA_SUCCESS);
  ASSERT_EQ(d().stream_synchronize(s), CUDA_SUCCESS);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  std::vector<float> out(kBlocks);
  ASSERT_EQ(d().memcpy_dtoh_async(out.data(), address(device_out), kBlocks * sizeof(float), s),
            CUDA_SUCCESS);
  ASSERT_EQ(d().stream_synchronize(s), CUDA_SUCCESS);
  for (unsigned b = 0; b < kBlocks; ++b) {
    float expected = 0;
    for (unsigned i = b * kThreads; i < std::min((b + 1) * kThreads, kN); ++i) expected += in[i];
    EXPECT_EQ(out[b], expected) << "block " << b;
  }
  std::printf("64 blocks x 256 threads with 9 barriers each: %.1f ms\n", ms);
#if !defined(SF_EMU_ASAN) && !defined(SF_EMU_TSAN)
  EXPECT_LT(ms, 100.0);  // loosely: fibers switch in nanoseconds, not microseconds
#endif
}

TEST_F(EmulatorTest, ASourceThatDoesNotCompileGivesNvrtcsErrorWithTheCompilersMessage) {
  const std::string source =
      "extern \"C\" __global__ void broken(int* p) {\n  *p = undeclared_name;\n}\n";
  try {
    jit::Nvrtc::require().compile(source, "broken", device_->arch(), false, options());
    FAIL() << "compiled";
  } catch (const CompileError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("NVRTC_ERROR_COMPILATION"), std::string::npos) << what;
    EXPECT_NE(what.find("undeclared_name"), std::string::npos) << what;
    EXPECT_NE(what.find("broken.cu:2"), std::string::npos) << what;  // its own file and line
  }
  EXPECT_THROW(
      jit::Nvrtc::require().compile("", "empty", device_->arch(), false, {"--no-such-option"}),
      CompileError);
  EXPECT_THROW(jit::Nvrtc::require().compile("", "empty", 52, false, {}), CompileError);
}

}  // namespace
}  // namespace streamfuse::backends::cuda::emulator::testing
