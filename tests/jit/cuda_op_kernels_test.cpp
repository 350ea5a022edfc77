// CudaOpKernels' library kernels (arange, random values, reductions, integer products) are
// compiled once, kept loaded, and persisted: a second instance over the same kernel files (as a
// second process would be) loads the module instead of compiling it, and computes the same
// values. Runs on cuda:0 and skips without one; CI runs it on the emulated GPU.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "backends/caching_allocator.h"
#include "backends/cuda/context.h"
#include "backends/cuda/device_memory.h"
#include "backends/cuda/stream_set.h"
#include "cache/cache_dir.h"
#include "jit/cuda_op_kernels.h"
#include "jit/cuda_toolchain.h"
#include "jit/kernel_files.h"
#include "streamfuse/error.h"
#include "tests/temp_dir.h"

namespace streamfuse::jit {
namespace {

namespace cuda = backends::cuda;

// The library kernels never launch fused programs.
class NoLauncher final : public KernelLauncher {
 public:
  void launch(const FusedProgram&, const ProgramFacts&, const Shape&,
              std::span<const LaunchOperand>, std::span<const LaunchOperand>,
              std::span<const std::int64_t>) override {
    ADD_FAILURE() << "a fused program was launched";
  }
};

class CudaOpKernelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      device_ = cuda::DeviceContext::open(0);
    } catch (const DeviceError& e) {
      GTEST_SKIP() << e.what();
    }
    memory_ = std::make_unique<cuda::DeviceMemory>(device_);
    streams_ = std::make_unique<cuda::StreamSet>(device_);
    allocator_ = std::make_unique<backends::CachingAllocator>(*memory_, 1 << 20);
    dir_ = std::make_shared<cache::CacheDir>(tmp_.path(), std::uint64_t{1} << 30);
    files_ = std::make_unique<jit::KernelFiles>(dir_, CudaToolchain(device_).fingerprint());
  }

  std::unique_ptr<CudaOpKernels> kernels() {
    return std::make_unique<CudaOpKernels>(
        device_, launcher_, [this] { return streams_->get(1); }, files_.get());
  }

  // arange(3, 3 + 7 * n, 7) as i64 through `k`, read back.
  std::vector<long long> arange(CudaOpKernels& k, std::int64_t n) {
    backends::TensorHandle out;
    out.storage = allocator_->allocate(static_cast<std::size_t>(n) * 8);
    core::OpDesc op;
    op.kind = core::OpKind::kArange;
    op.scalars = {Scalar(3), Scalar(7)};
    op.outputs.push_back({1, Shape{n}, kI64});
    k.arange(op, out);
    std::vector<long long> host(static_cast<std::size_t>(n));
    const cuda::Driver& d = device_->driver();
    device_->make_current();
    d.check(d.memcpy_dtoh_async(host.data(), cuda::device_address(out.storage.data()),
                                host.size() * 8, streams_->get(1)),
            "copy");
    streams_->synchronize(1);
    return host;
  }

  testing::TempDir tmp_;
  std::shared_ptr<const cuda::DeviceContext> device_;
  std::unique_ptr<cuda::DeviceMemory> memory_;
  std::unique_ptr<cuda::StreamSet> streams_;
  std::unique_ptr<backends::CachingAllocator> allocator_;
  std::shared_ptr<cache::CacheDir> dir_;
  std::unique_ptr<jit::KernelFiles> files_;
  NoLauncher launcher_;
};

TEST_F(CudaOpKernelsTest, LibraryModulesAreCompiledOnceThenLoadedFromTheCacheDirectory) {
  std::vector<long long> want(1000);
  for (std::size_t i = 0; i < want.size(); ++i) want[i] = 3 + 7 * static_cast<long long>(i);
  {
    auto first = kernels();
    EXPECT_EQ(arange(*first, 1000), want);
    EXPECT_EQ(arange(*first, 1000), want) << "the module stays loaded";
    EXPECT_EQ(first->library_modules(), 1u);
    EXPECT_EQ(first->library_modules_loaded(), 0u) << "an empty directory: compiled";
  }
  auto second = kernels();
  EXPECT_EQ(arange(*second, 1000), want);
  EXPECT_EQ(second->library_modules_loaded(), 1u) << "the first instance's module, from disk";
}

}  // namespace
}  // namespace streamfuse::jit
