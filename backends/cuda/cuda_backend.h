// The CUDA backend of one device: device memory through a caching allocator whose reuse is
// ordered across CUDA streams, a CUDA stream per streamfuse stream, host copies through pinned
// staging, matrix products through cuBLAS, and every other op through kernels the JIT generates
// (GeneratedKernels). Calls queue work and return; to_host() and wait_idle() wait for it.
#pragma once

#include <memory>

#include "backends/backend.h"
#include "backends/caching_allocator.h"
#include "backends/cuda/context.h"
#include "backends/cuda/cuda_matmul.h"
#include "backends/cuda/device_memory.h"
#include "backends/cuda/generated_kernels.h"
#include "backends/cuda/pinned_staging.h"
#include "backends/cuda/stream_set.h"

namespace streamfuse::backends::cuda {

class CudaBackend final : public Backend {
 public:
  // Opens device `ordinal`. Throws DeviceError without a usable driver or for a device that is
  // not there.
  explicit CudaBackend(int ordinal);
  ~CudaBackend() override;

  // The kernels it runs ops with; set once by the device runtime before the first op.
  void set_kernels(std::unique_ptr<GeneratedKernels> kernels) { kernels_ = std::move(kernels); }
  const std::shared_ptr<const DeviceContext>& context() const { return device_; }
  StreamSet& streams() { return streams_; }

  Device device() const override { return Device::cuda(device_->ordinal()); }
  void configure(const BackendSettings& settings) override;
  void execute(const core::OpDesc& op, std::span<TensorHandle> inputs,
               std::span<TensorHandle> outputs) override;
  TensorHandle allocate(const Shape& shape, DType dtype) override;
  TensorHandle from_host(const void* host, DType dtype, const Shape& shape) override;
  void copy(const Shape& shape, const TensorHandle& from, DType from_dtype, const TensorHandle& to,
            DType to_dtype) override;
  void to_host(const TensorHandle& h, DType dtype, const Shape& shape, void* host) override;
  void share(const TensorHandle& h, StreamId producer, StreamId consumer) override;
  void overwrite(const TensorHandle& h) override;
  void wait_idle() override { streams_.synchronize_all(); }
  MemoryStats memory_stats() const override { return allocator_.stats(); }
  void reset_peak_memory_stats() override { allocator_.reset_peak(); }
  void empty_cache() override;

 private:
  GeneratedKernels& kernels();
  void run_elementwise(const core::OpDesc& op, std::span<TensorHandle> inputs, TensorHandle& out);
  void run_matmul(const core::OpDesc& op, std::span<TensorHandle> inputs, TensorHandle& out);
  // IndexSelect and Gather: the kernel, then its check read back (throws Error naming the first
  // index out of range).
  void run_window(const core::OpDesc& op, std::span<TensorHandle> inputs, TensorHandle& out);
  void run_index(const core::OpDesc& op, std::span<TensorHandle> inputs, TensorHandle& out);
  void run_scatter(const core::OpDesc& op, std::span<TensorHandle> inputs, TensorHandle& out);
  // After an index kernel: reads `bad` back (a sync point) and, when set, throws the Error the
  // CPU gives for op's first bad index (op.inputs[1], contiguous in `indices`).
  void raise_flagged_index(const core::OpDesc& op, const TensorHandle& bad,
                           const TensorHandle& indices);

  std::shared_ptr<const DeviceContext> device_;
  // Declared in destruction order's reverse: the allocator returns its blocks (and the streams
  // finish their work) before the memory source and the context go.
  DeviceMemory memory_;
  StreamSet streams_;
  CachingAllocator allocator_;
  PinnedStaging staging_;
  CudaMatmul matmul_;
  std::unique_ptr<GeneratedKernels> kernels_;
};

}  // namespace streamfuse::backends::cuda
