// The CPU's KernelToolchain: C++ from jit/cpp_codegen, compiled by the system compiler into a
// shared object, loaded with dlopen (from the file it built, or from an image's bytes through a
// memory file). It builds either in a directory that keeps what it built (tests and tools reuse
// it), or in a scratch folder of this process's (cache/scratch_area.h), removing the files of
// each build once its library is loaded: what persists is the cache directory's business.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "cache/scratch_area.h"
#include "jit/kernel_toolchain.h"
#include "jit/system_compiler.h"

namespace streamfuse::jit {

class CpuToolchain final : public KernelToolchain {
 public:
  // Builds in `directory` (created), keeping the files. Empty, or one that cannot be written
  // (with a warning): builds in the folder `scratch` returns (called at each build; it may
  // throw CacheError), or, when that is unset, in a scratch folder of its own under
  // cache::private_scratch_base(). `fingerprint` empty: kernel_fingerprint(isa_level()).
  CpuToolchain(std::string directory, std::string fingerprint,
               std::chrono::milliseconds compile_timeout,
               std::function<std::filesystem::path()> scratch = {});
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

  // The directory that keeps what is built; empty when builds use a scratch folder.
  const std::string& directory() const { return directory_; }

 private:
  // Builds `source` in `folder`; with `keep`, reuses a library built there before and leaves
  // the files, else removes them.
  BuiltLibrary build_in(const std::filesystem::path& folder, const std::string& source, bool keep);

  std::string directory_;
  std::function<std::filesystem::path()> scratch_;
  std::unique_ptr<cache::ScratchArea> own_scratch_;  // when no `scratch` was given
  std::string fingerprint_;
  std::chrono::milliseconds compile_timeout_;
  std::optional<SystemCompiler> compiler_;  // set by prepare()
};

}  // namespace streamfuse::jit
