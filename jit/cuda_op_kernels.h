// The CUDA backend's GeneratedKernels: element-wise ops, full() and copies as one-op
// FusedPrograms through the device's CudaLauncher (so they share the fused kernels' cache,
// persistence and code); arange, random values, reductions and integer products as library
// kernels (jit/cuda_library_source.h), compiled by NVRTC once per kind and dtype on first use and
// kept loaded.
#pragma once

#include <cuda.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include <boost/unordered/unordered_flat_map.hpp>

#include "backends/cuda/context.h"
#include "backends/cuda/generated_kernels.h"
#include "jit/cuda_launcher.h"
#include "jit/cuda_toolchain.h"
#include "jit/kernel_store.h"
#include "jit/program.h"

namespace streamfuse::jit {

class CudaOpKernels final : public backends::cuda::GeneratedKernels {
 public:
  // `launcher` runs the one-op programs; `stream_of` gives the CUDA stream of the calling thread;
  // library modules persist in `store` (not owned; may be null).
  CudaOpKernels(std::shared_ptr<const backends::cuda::DeviceContext> device,
                KernelLauncher& launcher, std::function<CUstream()> stream_of, KernelStore* store);

  void elementwise(const core::OpDesc& op, std::span<const backends::TensorHandle> inputs,
                   const backends::TensorHandle& out) override;
  void copy(const Shape& shape, const backends::TensorHandle& from, DType from_dtype,
            const backends::TensorHandle& to, DType to_dtype) override;
  void arange(const core::OpDesc& op, const backends::TensorHandle& out) override;
  void random(const core::OpDesc& op, const backends::TensorHandle& out) override;
  void reduce(const core::OpDesc& op, const backends::TensorHandle& in,
              const backends::TensorHandle& out,
              const std::function<backends::TensorHandle(std::size_t)>& scratch) override;
  void integer_matmul(DType dtype, const backends::MatmulOperand& a,
                      const backends::MatmulOperand& b, void* out, const Shape& out_shape) override;
  void index(const core::OpDesc& op, const backends::TensorHandle& x,
             const backends::TensorHandle& indices, const backends::TensorHandle& out,
             const backends::TensorHandle& bad) override;
  void scan(const core::OpDesc& op, const backends::TensorHandle& x,
            const backends::TensorHandle& out,
            const std::function<backends::TensorHandle(std::size_t)>& scratch) override;
  void scatter(const core::OpDesc& op, const backends::TensorHandle& index,
               const backends::TensorHandle& src, const backends::TensorHandle& out,
               const backends::TensorHandle& bad) override;
  void window(const core::OpDesc& op, const backends::TensorHandle& x,
              const backends::TensorHandle* w, const backends::TensorHandle& out) override;

  // Library modules loaded so far, and how many of them came from the store (for tests).
  std::size_t library_modules() const;
  std::size_t library_modules_loaded() const;

 private:
  struct Program {
    FusedProgram program;
    ProgramFacts facts;
  };
  // The cached program of a one-op kind (`key` names everything it depends on).
  const Program& program(std::uint64_t key, const std::function<FusedProgram()>& make);
  // Kernel `kernel` of the library source `source` (whose kernels are named after `name`),
  // compiled and loaded on first use. Throws Error with NVRTC's message when it does not build.
  CUfunction library_kernel(const std::string& name, const std::string& source,
                            const std::string& kernel);
  // Launches `fn` over `blocks` blocks of kCudaBlockSize threads with one argument struct.
  void launch(CUfunction fn, std::int64_t blocks, void* args, const std::string& what);

  std::shared_ptr<const backends::cuda::DeviceContext> device_;
  KernelLauncher& launcher_;
  std::function<CUstream()> stream_of_;
  KernelStore* store_;
  CudaToolchain toolchain_;

  mutable std::mutex programs_mutex_;
  boost::unordered_flat_map<std::uint64_t, std::unique_ptr<Program>> programs_;

  struct Module {
    std::shared_ptr<void> module;
    boost::unordered_flat_map<std::string, CUfunction> functions;
  };
  mutable std::mutex modules_mutex_;  // held while a library module compiles: they are few
  boost::unordered_flat_map<std::string, Module> modules_;
  std::size_t modules_loaded_ = 0;
};

}  // namespace streamfuse::jit
