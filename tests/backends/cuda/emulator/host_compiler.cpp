#include "tests/backends/cuda/emulator/host_compiler.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

extern char** environ;

namespace streamfuse::backends::cuda::emulator {
namespace {

namespace fs = std::filesystem;

bool write_file(const fs::path& path, const std::string& text) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  std::ofstream out(path, std::ios::binary);
  out << text;
  return static_cast<bool>(out);
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs argv with its output to `log`; its exit status, or -1 (errno set) when it did not start.
int run(const std::vector<std::string>& args, const fs::path& log) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  const int error = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0) {
    errno = error;
    return -1;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

std::string host_compiler() {
  if (const char* cxx = std::getenv("SF_EMU_CXX"); cxx && *cxx) return cxx;
  return SF_EMU_DEFAULT_CXX;
}

HostCompile compile_shared_object(const std::string& source, const std::vector<std::string>& flags,
                                  const std::vector<std::pair<std::string, std::string>>& headers) {
  HostCompile out;
  std::error_code ec;
  std::string dir_template = (fs::temp_directory_path(ec) / "sf_emu_nvrtc_XXXXXX").string();
  if (ec || !mkdtemp(dir_template.data())) {
    out.log = "streamfuse CUDA emulator: cannot create a temporary directory: " +
              std::string(std::strerror(errno));
    return out;
  }
  const fs::path dir = dir_template;
  const fs::path src = dir / "program.cpp", object = dir / "program.so", log = dir / "log";
  bool written = write_file(src, source);
  for (const auto& [name, text] : headers) written = written && write_file(dir / name, text);
  if (!written) {
    out.log = "streamfuse CUDA emulator: cannot write the program into " + dir.string();
  } else {
    std::vector<std::string> args = {host_compiler()};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"-I", dir.string(), "-x", "c++", src.string(), "-o", object.string()});
    const int status = run(args, log);
    out.ran = status >= 0;
    out.log = out.ran ? read_file(log)
                      : "streamfuse CUDA emulator: cannot run the host compiler " + args[0] + ": " +
                            std::strerror(errno) + " (set SF_EMU_CXX to one)";
    out.ok = status == 0;
    if (out.ok) out.image = read_file(object);
    out.ok = out.ok && !out.image.empty();
  }
  fs::remove_all(dir, ec);
  return out;
}

}  // namespace streamfuse::backends::cuda::emulator
