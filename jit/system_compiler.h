// The system C++ compiler that turns generated kernel sources into shared objects, and the
// loader for them. Kernels are compiled with the flags of the eager kernels' ISA level
// (cmake/CpuIsa.cmake), so compiled and eager results agree bit for bit.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace streamfuse::jit {

// A compiler to try: the words of its command (a program looked up on PATH and the arguments that
// come before the kernel flags, as in CXX="ccache g++"), and the variable that named it ("" for
// the defaults).
struct CompilerCandidate {
  std::string variable;
  std::vector<std::string> command;
};
// What probe() tries, in order: $STREAMFUSE_CXX when set, else $CXX when set (the usual way to
// choose a C++ compiler; either one alone, never a fallback past a compiler the user chose), else
// c++, g++ and clang++ from PATH. A variable's value is split at spaces, without quoting.
std::vector<CompilerCandidate> compiler_candidates();

class SystemCompiler {
 public:
  // The first of compiler_candidates() that answers `--version`; nullopt when none does. Kernels
  // get the flags of x86-64 level `isa_level` (backends/cpu/isa.h; 0 adds no ISA flags). Spawns
  // one process per candidate, so callers probe once and keep the result.
  static std::optional<SystemCompiler> probe(int isa_level);
  // probe(backends::cpu::isa_level()).
  static std::optional<SystemCompiler> probe();

  // The program run: as given on PATH or by the variable.
  const std::string& executable() const { return command_.front(); }
  // The variable that chose the compiler ("STREAMFUSE_CXX", "CXX"), or "" for a default.
  const std::string& variable() const { return variable_; }
  // The first line of `--version`.
  const std::string& version() const { return version_; }
  // Every argument before `-o <library> <source>`.
  const std::vector<std::string>& flags() const { return flags_; }
  // The command and its flags as one line, for keys and logs.
  std::string command_line() const;
  // The name of the library built from `source`: a hash of the source, the full command and the
  // compiler's version, as 16 hex digits.
  std::string library_key(std::string_view source) const;

  // Compiles the file `source_path` into the shared object `library_path`, the compiler running
  // under jit/child_process.h's guard (it never outlives this process). Throws CompileError
  // naming the source path with the compiler's first error lines, the timeout it ran past, or
  // that the process is exiting (stop_child_processes()).
  void compile(const std::string& source_path, const std::string& library_path,
               std::chrono::milliseconds timeout = std::chrono::minutes(5)) const;

 private:
  std::vector<std::string> command_;  // never empty
  std::string variable_;
  std::string version_;
  std::vector<std::string> flags_;
};

// The flags kernels are compiled with at x86-64 level `isa_level` (2, 3, 4; 0 for none): the
// project's kernel flags, -march=x86-64-v<level> (+ 512-bit vectors at v4), -mtune=native,
// -fPIC -shared.
std::vector<std::string> kernel_compile_flags(int isa_level);

// What a compiled kernel library depends on besides its source, as one line: the streamfuse
// version and kernel ABI, the compiler probe() would pick (its resolved path, size and modification
// time: a changed compiler changes it, and nothing is run to find out), the kernel flags and the
// x86-64 level. Libraries built under another fingerprint are not loaded.
std::string kernel_fingerprint(int isa_level);

// Loads a shared object with dlopen(RTLD_NOW | RTLD_LOCAL); the last copy of the pointer
// dlcloses it. Throws CompileError with the path and dlerror().
std::shared_ptr<void> load_library(const std::string& path);
// Loads a shared object from its bytes (through an anonymous memory file, so nothing is written
// to disk); `name` appears in errors. Throws CompileError when the bytes do not load.
std::shared_ptr<void> load_library_image(std::string_view bytes, const std::string& name);
// The address of `symbol` in `library`, or nullptr when it has none.
void* find_symbol(const std::shared_ptr<void>& library, const char* symbol);

}  // namespace streamfuse::jit
