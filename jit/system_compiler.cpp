#include "jit/system_compiler.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "backends/cpu/isa.h"
#include "jit/hash_mix.h"
#include "streamfuse/error.h"

extern char** environ;

namespace streamfuse::jit {
namespace {

constexpr std::size_t kMaxOutput = 64 * 1024;  // compiler output kept for error messages
constexpr int kErrorLines = 8;

struct ProcessResult {
  bool started = false;
  bool timed_out = false;
  int exit_code = -1;  // -1 when killed by a signal
  std::string output;  // stdout and stderr together, truncated to kMaxOutput
};

// Runs argv (argv[0] looked up on PATH, no shell) with stdin from /dev/null, collecting its
// output; past `timeout` its process group is killed.
ProcessResult run_process(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  ProcessResult r;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return r;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);  // own group: a timeout kills cc1plus too
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return r;
  }
  r.started = true;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    const ssize_t got = read(fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // EOF: every writer exited
    if (r.output.size() < kMaxOutput) r.output.append(buf, static_cast<std::size_t>(got));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  return r;
}

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

// The compilers probe() tries, in order.
std::vector<std::string> compiler_candidates() {
  if (const char* env = std::getenv("STREAMFUSE_CXX"); env && *env) return {env};
  return {"c++", "g++", "clang++"};
}

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

std::optional<SystemCompiler> SystemCompiler::probe(int isa_level) {
  for (const std::string& cxx : compiler_candidates()) {
    const ProcessResult r = run_process({cxx, "--version"}, std::chrono::seconds(10));
    if (!r.started || r.timed_out || r.exit_code != 0) continue;
    SystemCompiler c;
    c.executable_ = cxx;
    c.version_ = first_line(r.output);
    c.flags_ = kernel_compile_flags(isa_level);
    return c;
  }
  return std::nullopt;
}

std::optional<SystemCompiler> SystemCompiler::probe() { return probe(backends::cpu::isa_level()); }

std::string SystemCompiler::command_line() const {
  std::string line = executable_;
  for (const std::string& f : flags_) line += " " + f;
  return line;
}

std::string SystemCompiler::library_key(std::string_view source) const {
  const std::string command = command_line();
  std::uint64_t h = kFnvBasis;
  for (std::string_view part : {source, std::string_view(command), std::string_view(version_)})
    h = fnv1a(std::string_view("\0", 1), fnv1a(part, h));
  return hex16(h);
}

void SystemCompiler::compile(const std::string& source_path, const std::string& library_path,
                             std::chrono::milliseconds timeout) const {
  std::vector<std::string> argv = {executable_};
  argv.insert(argv.end(), flags_.begin(), flags_.end());
  argv.insert(argv.end(), {"-o", library_path, source_path});
  const ProcessResult r = run_process(argv, timeout);
  if (!r.started)
    throw CompileError("jit: cannot start compiler '" + executable_ + "' for " + source_path +
                       "; set STREAMFUSE_CXX to a working C++ compiler");
  if (r.timed_out)
    throw CompileError("jit: compiling " + source_path + " ran past " +
                       std::to_string(timeout.count()) + " ms and was stopped (" + command_line() +
                       ")");
  if (r.exit_code != 0)
    throw CompileError("jit: compiling " + source_path + " failed (" + command_line() + "):\n" +
                       error_lines(r.output));
}

// Bump when the kernel calling convention (jit/kernel_abi.h) or the prelude's meaning changes.
constexpr int kKernelAbiVersion = 1;

std::string kernel_fingerprint(int isa_level) {
  std::string compiler = "none";
  for (const std::string& cxx : compiler_candidates()) {
    const std::string resolved = resolve_executable(cxx);
    struct stat st {};
    if (resolved.empty() || stat(resolved.c_str(), &st) != 0) continue;
    compiler = resolved + " size " + std::to_string(st.st_size) + " mtime " +
               std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
    break;
  }
  std::string flags;
  for (const std::string& f : kernel_compile_flags(isa_level)) flags += " " + f;
  return "streamfuse " STREAMFUSE_VERSION " kernel-abi " + std::to_string(kKernelAbiVersion) +
         "; cxx " + compiler + ";" + flags;
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
