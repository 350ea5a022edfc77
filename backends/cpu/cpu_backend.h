// The CPU backend: host memory through a caching allocator, and eager kernels for every op.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>

#include "backends/backend.h"
#include "backends/caching_allocator.h"
#include "backends/cpu/conv.h"
#include "backends/cpu/host_memory.h"
#include "backends/cpu/kernels/kernels.h"
#include "backends/cpu/kernels/parallel.h"
#include "backends/cpu/matmul.h"

namespace streamfuse::backends::cpu {

class CpuBackend final : public Backend {
 public:
  CpuBackend();

  Device device() const override { return Device::cpu(); }
  void configure(const BackendSettings& settings) override;
  void execute(const core::OpDesc& op, std::span<TensorHandle> inputs,
               std::span<TensorHandle> outputs) override;
  TensorHandle from_host(const void* host, DType dtype, const Shape& shape) override;
  void copy(const Shape& shape, const TensorHandle& from, DType from_dtype, const TensorHandle& to,
            DType to_dtype) override;
  void to_host(const TensorHandle& h, DType dtype, const Shape& shape, void* host) override;
  MemoryStats memory_stats() const override { return allocator_.stats(); }
  void reset_peak_memory_stats() override { allocator_.reset_peak(); }
  void empty_cache() override { allocator_.empty_cache(); }
  CachingAllocator* host_allocator() override { return &allocator_; }
  // f32 products apply their steps as they store their results: as oneDNN post-ops where oneDNN
  // has a kernel for them (not for an operand that varies along m only), in the dot-row kernel
  // for its products of one row or column.
  bool fuses_product_epilogues() const override { return true; }
  bool execute_product(const core::OpDesc& product, std::span<TensorHandle> inputs,
                       std::span<const ProductStep> steps, TensorHandle& out) override;
  std::int64_t fused_products() const override {
    return fused_products_.load(std::memory_order_relaxed);
  }
  // Through the batched GEMM, where both products run in it (MatmulEngine::run_chain).
  bool execute_product_chain(const core::OpDesc& first, std::span<TensorHandle> inputs,
                             const RowStage& stage, const core::OpDesc& second,
                             const TensorHandle& second_b, TensorHandle& out) override;
  bool chains_products() const override { return true; }
  std::int64_t chained_products() const override {
    return chained_products_.load(std::memory_order_relaxed);
  }
  // Matmuls of float dtypes: their oneDNN primitive.
  bool prepare(const PreparedOp& p) override;
  void set_prepared_listener(std::function<void(const PreparedOp&)> listener) override;

  TensorHandle allocate(const Shape& shape, DType dtype) override;
  // The kernels this CPU runs (for tests and logs).
  const KernelTable& kernels() const { return kernels_; }

 private:
  // As allocate(); with `zeroed`, a block that reads as zeros where the allocator has one (then
  // *zeroed is set: nothing need clear it).
  TensorHandle allocate(const Shape& shape, DType dtype, bool* zeroed);
  void run_elementwise(const core::OpDesc& op, std::span<TensorHandle> inputs, TensorHandle& out);
  void run_reduce(const core::OpDesc& op, TensorHandle& in, TensorHandle& out);
  void run_matmul(const core::OpDesc& op, std::span<TensorHandle> inputs, TensorHandle& out);
  void run_conv(const core::OpDesc& op, std::span<TensorHandle> inputs, TensorHandle& out);
  // Hands `p` (op with `input_strides`) to the prepared listener, if one is set: the first run of
  // a library primitive in this process, worth preparing ahead next time.
  void report_first_use(const core::OpDesc& op,
                        std::vector<std::array<std::int64_t, kMaxRank>> input_strides,
                        std::vector<PreparedOp::PostOp> post_ops = {});
  // The threads an op runs on now: the configured count, less the cores the process's
  // background work keeps busy (kernels/parallel.h).
  int threads() const { return threads_beside_background(configured_threads()); }
  // What the settings ask for (0: all cores): what prepared primitives are made for, as they are
  // for the runs after the background work, and what products are given (MatmulEngine::run runs
  // oneDNN's on it, whose bits may depend on the count, and its own kernels beside background).
  int configured_threads() const { return num_threads_.load(std::memory_order_relaxed); }

  HostMemory memory_;
  CachingAllocator allocator_;
  MatmulEngine matmul_;
  ConvEngine conv_;
  const KernelTable& kernels_;
  std::atomic<int> num_threads_{0};
  std::atomic<std::int64_t> fused_products_{0};
  std::atomic<std::int64_t> chained_products_{0};
  std::mutex listener_mutex_;  // set once at start-up, read on first uses: never contended
  std::function<void(const PreparedOp&)> listener_;
};

// The CPU backend, for the device runtime.
std::unique_ptr<Backend> make_cpu_backend();

}  // namespace streamfuse::backends::cpu
