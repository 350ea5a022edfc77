// What the benchmarks that time a fresh process share (bench/cold_start_bench.cpp,
// bench/block_bench.cpp): the benchmark re-executes itself as a child with its own cache
// directory and fusion setting, and reads back the child's one result line,
// `<tag> key=value key=value ...`.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

extern char** environ;

namespace streamfuse::bench {

namespace fs = std::filesystem;

// A private temporary directory, removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "streamfuse-bench-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed: " + pattern);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

inline std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct ChildRun {
  std::string error;  // empty when the child exited 0 (and, if asked for, printed its result)
  std::map<std::string, double> values;  // the result line's fields
};

// Runs this executable (`name` as its argv[0]) with `args` in a new process whose cache directory
// is `cache_dir` and whose fusion is on or off; its stdout and stderr go to files under
// `scratch`. With `result_tag` not empty, the child must print a line starting with it, whose
// key=value fields are returned. With STREAMFUSE_LOG set (it passes to the child), the child's
// log lines are shown.
inline ChildRun spawn_child(std::string_view name, const std::vector<std::string>& args,
                            const fs::path& cache_dir, bool fusion, const fs::path& scratch,
                            std::string_view result_tag) {
  static int count = 0;
  const std::string file = "child-" + std::to_string(++count);
  const fs::path out_path = scratch / (file + ".out"), err_path = scratch / (file + ".err");

  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view v = *e;
    if (v.starts_with("STREAMFUSE_CACHE_DIR=") || v.starts_with("STREAMFUSE_FUSION=")) continue;
    env_strings.emplace_back(v);
  }
  env_strings.push_back("STREAMFUSE_CACHE_DIR=" + cache_dir.string());
  env_strings.push_back(std::string("STREAMFUSE_FUSION=") + (fusion ? "1" : "0"));
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);

  std::vector<std::string> arg_strings = {std::string(name)};
  arg_strings.insert(arg_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : arg_strings) argv.push_back(s.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int spawn_error =
      posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ChildRun run;
  if (spawn_error != 0) {
    run.error = "posix_spawn failed: " + std::string(std::strerror(spawn_error));
    return run;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }

  if (const char* log = std::getenv("STREAMFUSE_LOG"); log != nullptr && *log != '\0')
    std::fputs(read_file(err_path).c_str(), stderr);
  const std::string out = read_file(out_path);
  std::string problem;
  if (WIFSIGNALED(status)) {
    problem = "killed by signal " + std::to_string(WTERMSIG(status));
  } else if (WEXITSTATUS(status) != 0) {
    problem = "exited with status " + std::to_string(WEXITSTATUS(status));
  } else if (!result_tag.empty()) {
    const std::size_t at = out.find(result_tag);
    if (at == std::string::npos) {
      problem = "printed no result line";
    } else {
      const std::size_t begin = at + result_tag.size(), end = out.find('\n', at);
      std::istringstream line(out.substr(begin, end == std::string::npos ? end : end - begin));
      for (std::string field; line >> field;) {
        const std::size_t eq = field.find('=');
        if (eq != std::string::npos)
          run.values[field.substr(0, eq)] = std::strtod(field.c_str() + eq + 1, nullptr);
      }
    }
  }
  if (!problem.empty()) {
    std::string err = read_file(err_path);
    if (err.size() > 800) err = "..." + err.substr(err.size() - 800);
    run.error =
        "child `" + (args.empty() ? std::string() : args[0]) + "` " + problem + "; stderr: " + err;
  }
  return run;
}

}  // namespace streamfuse::bench
