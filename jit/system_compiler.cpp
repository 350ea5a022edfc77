#include "jit/system_compiler.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "backends/cpu/isa.h"
#include "core/environment.h"
#include "core/hash_mix.h"
#include "jit/child_process.h"
#include "jit/codegen_digest.h"
#include "jit/cpp_codegen.h"
#include "streamfuse/error.h"

namespace streamfuse::jit {
namespace {

constexpr int kErrorLines = 8;

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// The lines that say "error" (or, lacking any, the first lines), at most kErrorLines.
std::string error_lines(const std::string& output) {
  std::string errors, head;
  int n_errors = 0, n_head = 0;
  for (std::size_t pos = 0; pos < output.size();) {
    std::size_t eol = output.find('\n', pos);
    if (eol == std::string::npos) eol = output.size();
    const std::string_view line(output.data() + pos, eol - pos);
    if (n_head < kErrorLines) head.append(line).push_back('\n'), ++n_head;
    if (n_errors < kErrorLines && line.find("error") != std::string_view::npos)
      errors.append(line).push_back('\n'), ++n_errors;
    pos = eol + 1;
  }
  return n_errors ? errors : head;
}

}  // namespace

std::vector<std::string> kernel_compile_flags(int isa_level) {
  std::vector<std::string> f = {"-std=c++20", "-O3", "-ffp-contract=off", "-fno-math-errno",
                                "-fno-trapping-math"};
  if (isa_level >= 2) {
    f.push_back("-march=x86-64-v" + std::to_string(isa_level));
    if (isa_level >= 4) f.push_back("-mprefer-vector-width=512");
    f.push_back("-mtune=native");
  }
  f.insert(f.end(), {"-fPIC", "-shared"});
  return f;
}

namespace {

// A command as the environment gives it: words split at spaces (no quoting), so that
// CXX="ccache g++" runs ccache with g++ as its first argument.
std::vector<std::string> command_words(std::string_view text) {
  std::vector<std::string> words;
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t start = text.find_first_not_of(" \t", pos);
    if (start == std::string_view::npos) break;
    const std::size_t end = std::min(text.find_first_of(" \t", start), text.size());
    words.emplace_back(text.substr(start, end - start));
    pos = end;
  }
  return words;
}

}  // namespace

std::vector<CompilerCandidate> compiler_candidates() {
  for (const char* variable : {"STREAMFUSE_CXX", "CXX"}) {
    const std::optional<std::string> env = core::env_text(variable);
    if (!env) continue;
    std::vector<std::string> words = command_words(*env);
    if (!words.empty()) return {CompilerCandidate{variable, std::move(words)}};
  }
  return {{"", {"c++"}}, {"", {"g++"}}, {"", {"clang++"}}};
}

namespace {

// `name` as execvp would find it, with symbolic links resolved; empty when it is not found.
std::string resolve_executable(const std::string& name) {
  namespace fs = std::filesystem;
  std::error_code ec;
  auto usable = [](const fs::path& p) { return access(p.c_str(), X_OK) == 0; };
  if (name.find('/') != std::string::npos)
    return usable(name) ? fs::canonical(name, ec).string() : std::string();
  const char* path = std::getenv("PATH");
  std::string_view dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  while (!dirs.empty()) {
    const std::size_t colon = dirs.find(':');
    const fs::path candidate = fs::path(dirs.substr(0, colon)) / name;
    if (usable(candidate)) {
      const fs::path resolved = fs::canonical(candidate, ec);
      if (!ec) return resolved.string();
    }
    dirs = colon == std::string_view::npos ? std::string_view() : dirs.substr(colon + 1);
  }
  return {};
}

}  // namespace

std::optional<SystemCompiler> SystemCompiler::probe(int isa_level) {
  for (CompilerCandidate& candidate : compiler_candidates()) {
    std::vector<std::string> argv = candidate.command;
    argv.push_back("--version");
    const ChildResult r = run_child_process(argv, std::chrono::seconds(10));
    if (!r.started || r.timed_out || r.exit_code != 0) continue;
    SystemCompiler c;
    c.command_ = std::move(candidate.command);
    c.variable_ = std::move(candidate.variable);
    c.version_ = first_line(r.output);
    c.flags_ = kernel_compile_flags(isa_level);
    return c;
  }
  return std::nullopt;
}

std::optional<SystemCompiler> SystemCompiler::probe() { return probe(backends::cpu::isa_level()); }

std::string SystemCompiler::command_line() const {
  std::string line;
  for (const std::string& word : command_) line += (line.empty() ? "" : " ") + word;
  for (const std::string& f : flags_) line += " " + f;
  return line;
}

std::string SystemCompiler::library_key(std::string_view source) const {
  const std::string command = command_line();
  std::uint64_t h = core::kFnvBasis;
  for (std::string_view part : {source, std::string_view(command), std::string_view(version_)})
    h = core::fnv1a(std::string_view("\0", 1), core::fnv1a(part, h));
  return core::hex16(h);
}

void SystemCompiler::compile(const std::string& source_path, const std::string& library_path,
                             std::chrono::milliseconds timeout) const {
  std::vector<std::string> argv = command_;
  argv.insert(argv.end(), flags_.begin(), flags_.end());
  argv.insert(argv.end(), {"-o", library_path, source_path});
  const ChildResult r = run_child_process(argv, timeout);
  if (r.stopped)
    throw CompileError("jit: compiling " + source_path + " was stopped: the process is exiting");
  if (!r.started)
    throw CompileError("jit: cannot start compiler '" + executable() + "' for " + source_path +
                       (variable_.empty() ? "; set STREAMFUSE_CXX or CXX to a working C++ compiler"
                                          : " (from " + variable_ + ")"));
  if (r.timed_out)
    throw CompileError("jit: compiling " + source_path + " ran past " +
                       std::to_string(timeout.count()) + " ms and was stopped (" + command_line() +
                       ")");
  if (r.exit_code != 0)
    throw CompileError("jit: compiling " + source_path + " failed (" + command_line() + "):\n" +
                       error_lines(r.output));
}

// Bump when the kernel calling convention (jit/kernel_abi.h), the generated code's meaning or the
// encoding of kernel records changes: kernel files are named under it, so older ones are a clean
// miss (the prelude's text is hashed into the fingerprint: a change of an op's math needs no
// bump). 2: programs are blocks around an anchor. 3: reduction anchors (jit/kernel_abi.h's
// CpuReduceKernelFn). 4: reduction kernels take kColumnRows.
constexpr int kKernelAbiVersion = 4;

std::string kernel_fingerprint(int isa_level) {
  std::string compiler = "none";
  for (const CompilerCandidate& candidate : compiler_candidates()) {
    const std::string resolved = resolve_executable(candidate.command.front());
    struct stat st {};
    if (resolved.empty() || stat(resolved.c_str(), &st) != 0) continue;
    compiler = resolved + " size " + std::to_string(st.st_size) + " mtime " +
               std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
    // A launcher's arguments (ccache's compiler) choose the compiler as much as its path does.
    for (std::size_t i = 1; i < candidate.command.size(); ++i)
      compiler += " " + candidate.command[i];
    break;
  }
  std::string flags;
  for (const std::string& f : kernel_compile_flags(isa_level)) flags += " " + f;
  // The kernels' math and the code written around it: a record names a library compiled from an
  // earlier prelude or generator by its program and key alone, and a library whose ops compute
  // other bits than the eager kernels would break fused == unfused.
  return "streamfuse " STREAMFUSE_VERSION " kernel-abi " + std::to_string(kKernelAbiVersion) +
         " prelude " + core::hex16(core::fnv1a(cpu_kernel_prelude())) + " codegen " +
         codegen_digest() + "; cxx " + compiler + ";" + flags;
}

std::shared_ptr<void> load_library_image(std::string_view bytes, const std::string& name) {
  const int fd = memfd_create(("streamfuse-" + name).c_str(), MFD_CLOEXEC);
  if (fd < 0)
    throw CompileError("jit: cannot load kernel library " + name +
                       ": memfd_create: " + std::strerror(errno));
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + written, bytes.size() - written);
    if (n <= 0) {
      const int err = errno;
      close(fd);
      throw CompileError("jit: cannot load kernel library " + name + ": " + std::strerror(err));
    }
    written += static_cast<std::size_t>(n);
  }
  // dlopen knows libraries by path: the descriptor stays open while the library is loaded, so no
  // later library gets the same /proc/self/fd name while this one is in use.
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    close(fd);
    throw CompileError("jit: cannot load kernel library " + name + ": " + (why ? why : "unknown"));
  }
  return std::shared_ptr<void>(handle, [fd](void* h) {
    dlclose(h);
    close(fd);
  });
}

std::shared_ptr<void> load_library(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    throw CompileError("jit: cannot load kernel library " + path + ": " + (why ? why : "unknown"));
  }
  return std::shared_ptr<void>(handle, [](void* h) { dlclose(h); });
}

void* find_symbol(const std::shared_ptr<void>& library, const char* symbol) {
  return library ? dlsym(library.get(), symbol) : nullptr;
}

}  // namespace streamfuse::jit
