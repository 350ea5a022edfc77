// Generated CUDA kernels run on a GPU and match the reference evaluation bit for bit (any NaN
// matching any NaN), for every case of the code generator tests (each op, dtype, conversion,
// layout, broadcast and stride class, in-place output): through the whole path a fused launch
// takes (CudaLauncher: merged dimensions and the launch's key, KernelCache::wait_for,
// CudaToolchain: NVRTC, module loading; the argument words). Built for x86-64-v3 so the reference
// uses FMA where the CUDA kernels' math does (__fmaf_rn). Skips without a GPU.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/caching_allocator.h"
#include "backends/cuda/context.h"
#include "backends/cuda/device_memory.h"
#include "backends/cuda/devices.h"
#include "core/scalar_ops.h"
#include "core/vector_math.h"
#include "jit/cuda_launcher.h"
#include "jit/cuda_toolchain.h"
#include "jit/kernel_cache.h"
#include "jit/nvrtc.h"
#include "tests/jit/codegen_cases.h"
#include "tests/jit/codegen_reference.h"

namespace streamfuse::jit {
namespace {

using namespace streamfuse::jit::testing;  // NOLINT: the shared cases and their vocabulary
namespace cuda = backends::cuda;

class CudaKernelsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (cuda::device_count() == 0) {
      skip_ = "no CUDA device: " + (cuda::Driver::get() ? std::string("the driver lists none")
                                                        : cuda::Driver::unavailable_reason());
      return;
    }
    if (!Nvrtc::get()) {
      skip_ = Nvrtc::unavailable_reason();
      return;
    }
    device_ = cuda::DeviceContext::open(0);
    const cuda::Driver& d = device_->driver();
    device_->make_current();
    d.check(d.stream_create(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    memory_ = std::make_unique<cuda::DeviceMemory>(device_);
    allocator_ = std::make_unique<backends::CachingAllocator>(*memory_, std::size_t{1} << 30);
    cache_ = std::make_unique<KernelCache>(std::make_unique<CudaToolchain>(device_),
                                           KernelCacheOptions{});
    launcher_ = std::make_unique<CudaLauncher>(device_, *cache_, [] { return stream_; });
  }
  static void TearDownTestSuite() {
    launcher_.reset();
    cache_.reset();
    allocator_.reset();
    memory_.reset();
    if (stream_) device_->driver().stream_destroy(stream_);
    device_.reset();
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
  }

  static void run_case(const Case& c) {
    const cuda::Driver& d = device_->driver();
    const PreparedCase prepared = prepare_case(c);
    const std::size_t ni = c.program.inputs.size();
    const std::vector<std::int64_t> dims(c.sizes.begin(), c.sizes.end());
    const Shape shape{std::span<const std::int64_t>(dims)};
    std::vector<backends::TensorHandle> handles(prepared.operands.size());
    for (std::size_t k = 0; k < handles.size(); ++k) {
      const Operand& op = prepared.operands[k];
      if (written_buffer(c, k) != k) {  // in place: the output is its input's buffer
        handles[k] = handles[written_buffer(c, k)];
        continue;
      }
      handles[k].storage = allocator_->allocate(op.bytes.size());
      for (std::size_t dim = 0; dim < op.strides.size(); ++dim)
        handles[k].strides[dim] = op.strides[dim];
      d.check(d.memcpy_htod_async(reinterpret_cast<CUdeviceptr>(handles[k].storage.data()),
                                  op.bytes.data(), op.bytes.size(), stream_),
              "upload");
    }
    std::vector<LaunchOperand> inputs, outputs;
    for (std::size_t k = 0; k < handles.size(); ++k)
      (k < ni ? inputs : outputs).push_back({&handles[k], shape, prepared.operands[k].dtype});
    const std::vector<std::int64_t> scalars(prepared.scalars.begin(), prepared.scalars.end());
    launcher_->launch(c.program, ProgramFacts::of(c.program), shape, inputs, outputs, scalars);
    std::vector<Operand> actual = prepared.operands;
    for (std::size_t k = 0; k < handles.size(); ++k)
      if (written_buffer(c, k) == k)
        d.check(d.memcpy_dtoh_async(actual[k].bytes.data(),
                                    reinterpret_cast<CUdeviceptr>(handles[k].storage.data()),
                                    actual[k].bytes.size(), stream_),
                "download");
    d.check(d.stream_synchronize(stream_), "cuStreamSynchronize");
    expect_outputs(c, actual, prepared.expected);
  }

  static int run_cases(const std::string& prefix) {
    int ran = 0;
    for (const Case& c : build_cases())
      if (c.name.rfind(prefix, 0) == 0) run_case(c), ++ran;
    return ran;
  }

  static inline std::string skip_;
  static inline std::shared_ptr<const cuda::DeviceContext> device_;
  static inline CUstream stream_ = nullptr;
  static inline std::unique_ptr<cuda::DeviceMemory> memory_;
  static inline std::unique_ptr<backends::CachingAllocator> allocator_;
  static inline std::unique_ptr<KernelCache> cache_;
  static inline std::unique_ptr<CudaLauncher> launcher_;
};

TEST_F(CudaKernelsTest, EveryOpOnEveryValueType) { EXPECT_EQ(run_cases("op/"), 16); }
TEST_F(CudaKernelsTest, LoadsAndStoresOfEveryDType) { EXPECT_EQ(run_cases("load/"), 9); }
TEST_F(CudaKernelsTest, ConversionsBetweenValueTypes) { EXPECT_EQ(run_cases("convert"), 2); }
TEST_F(CudaKernelsTest, RoundingTo16BitGridsAndWrappingTo8Bits) {
  EXPECT_EQ(run_cases("round"), 2);
}
TEST_F(CudaKernelsTest, GeluInEveryFloatDType) { EXPECT_EQ(run_cases("gelu/"), 3); }
TEST_F(CudaKernelsTest, ScalarArgumentsInBothModes) { EXPECT_EQ(run_cases("scalars"), 1); }
TEST_F(CudaKernelsTest, RanksBroadcastAndStrides) { EXPECT_EQ(run_cases("layout/"), 10); }
TEST_F(CudaKernelsTest, OutputsOverTheirInputs) { EXPECT_EQ(run_cases("alias/"), 2); }

}  // namespace
}  // namespace streamfuse::jit
