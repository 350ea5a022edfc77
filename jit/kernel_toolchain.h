// KernelToolchain: what a KernelCache needs from one kind of target (the CPU's system compiler
// and dlopen, or NVRTC and the CUDA driver): generating a kernel's source, building a translation
// unit of kernels into a loadable image, loading an image and finding a kernel in it. Everything
// else (batching, claims across processes, persistence, eviction) is the cache's and is shared.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "jit/kernel_store.h"
#include "jit/program.h"
#include "jit/specialization.h"

namespace streamfuse::jit {

struct BuiltLibrary {
  std::shared_ptr<void> library;  // loaded; the last copy unloads it
  std::string bytes;              // the image, to persist and to load elsewhere
  std::string key;                // 16 hex digits: the source, the build options and the tools
  std::string label;              // what logs and errors call it (a path, a program name)
  bool reused = false;            // found already built (not compiled by this call)
};

class KernelToolchain {
 public:
  virtual ~KernelToolchain() = default;

  // What images built here depend on besides their source; images under another fingerprint
  // are not loaded (their kernels are built again).
  virtual const std::string& fingerprint() const = 0;
  // Finds the tools. Called once, on the cache's thread, before the first build. False when
  // kernels cannot be built here, with `why` (warned once; fused programs are interpreted).
  virtual bool prepare(std::string& why) = 0;
  // One line for the jit log once prepare() succeeded ("compiler: gcc 12.2 (c++ -O3 ...)").
  virtual std::string describe() const = 0;

  // The text a translation unit starts with, and each kernel's definition after it. Throws
  // CompileError when the program cannot be expressed.
  virtual const std::string& prelude() const = 0;
  virtual std::string kernel_source(const FusedProgram& program, const SpecializationKey& key,
                                    std::string_view name) const = 0;

  // Builds and loads a translation unit. Throws CompileError with the tool's message.
  virtual BuiltLibrary build(const std::string& source) = 0;
  // Loads an image built before (here or by a process with the same fingerprint). Throws
  // CompileError when it does not load.
  virtual std::shared_ptr<void> load(const LibraryImage& image) = 0;
  // The kernel `name` of a loaded library, or nullptr.
  virtual void* find(const std::shared_ptr<void>& library, const std::string& name) = 0;
};

}  // namespace streamfuse::jit
