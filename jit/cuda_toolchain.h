// The CUDA KernelToolchain of one device: CUDA C++ from jit/cuda_codegen, compiled by NVRTC for
// the device (a cubin for sm_XX, or PTX when the GPU is newer than NVRTC), loaded as a module in
// the device's primary context, kernels found with cuModuleGetFunction. Nothing touches the
// disk: images persist through the KernelCache's store like CPU libraries.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "backends/cuda/context.h"
#include "jit/kernel_toolchain.h"
#include "jit/nvrtc.h"

namespace streamfuse::jit {

class CudaToolchain final : public KernelToolchain {
 public:
  explicit CudaToolchain(std::shared_ptr<const backends::cuda::DeviceContext> device);

  // "streamfuse <version> cuda-kernel-abi <n>; nvrtc <x.y>; sm_90 cubin; <options>": a module is
  // loaded only by a process compiling the same way for the same architecture.
  const std::string& fingerprint() const override { return fingerprint_; }
  bool prepare(std::string& why) override;
  std::string describe() const override;
  const std::string& prelude() const override;
  std::string kernel_source(const FusedProgram& program, const SpecializationKey& key,
                            std::string_view name) const override;
  BuiltLibrary build(const std::string& source) override;
  // The name build() gives the image of `source` (BuiltLibrary::key): its source and the
  // fingerprint, so it can be looked up in a store before building.
  std::string image_name(const std::string& source) const;
  std::shared_ptr<void> load(const LibraryImage& image) override;                      // a CUmodule
  void* find(const std::shared_ptr<void>& library, const std::string& name) override;  // CUfunction

 private:
  std::shared_ptr<void> load_module(const std::string& bytes, const std::string& what);

  std::shared_ptr<const backends::cuda::DeviceContext> device_;
  const Nvrtc* nvrtc_;                 // null when NVRTC cannot be loaded
  std::optional<NvrtcTarget> target_;  // null when NVRTC cannot target the device
  std::vector<std::string> options_;
  std::string fingerprint_;
};

}  // namespace streamfuse::jit
