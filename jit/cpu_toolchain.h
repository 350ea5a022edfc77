// The CPU's KernelToolchain: C++ from jit/cpp_codegen, compiled by the system compiler into a
// shared object in a build directory, loaded with dlopen (from the file it built, or from an
// image's bytes through a memory file).
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "jit/kernel_toolchain.h"
#include "jit/system_compiler.h"

namespace streamfuse::jit {

class CpuToolchain final : public KernelToolchain {
 public:
  // Builds in `directory` (created; empty, or one that cannot be written: a private temporary
  // directory that exists only while a build runs, with a warning for the latter). `fingerprint`
  // empty: kernel_fingerprint(isa_level()).
  CpuToolchain(std::string directory, std::string fingerprint,
               std::chrono::milliseconds compile_timeout);
  ~CpuToolchain() override;
  CpuToolchain(const CpuToolchain&) = delete;
  CpuToolchain& operator=(const CpuToolchain&) = delete;

  const std::string& fingerprint() const override { return fingerprint_; }
  bool prepare(std::string& why) override;
  std::string describe() const override;
  const std::string& prelude() const override;
  std::string kernel_source(const FusedProgram& program, const SpecializationKey& key,
                            std::string_view name) const override;
  BuiltLibrary build(const std::string& source) override;
  std::shared_ptr<void> load(const LibraryImage& image) override;
  void* find(const std::shared_ptr<void>& library, const std::string& name) override;

  // Where sources and libraries are built (the private fallback when the given one is unusable;
  // a private one exists only during builds).
  const std::string& directory() const { return directory_; }

 private:
  BuiltLibrary build_in_directory(const std::string& source);

  bool private_directory_ = false;  // before directory_: its initializer sets it
  std::string directory_;
  std::string fingerprint_;
  std::chrono::milliseconds compile_timeout_;
  std::optional<SystemCompiler> compiler_;  // set by prepare()
};

}  // namespace streamfuse::jit
