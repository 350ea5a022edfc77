// Compiles at a process's exit, end to end in fresh processes (this test binary run again as a
// child): a short-lived process leaves its kernels; a compile still running at a normal exit is
// handed on within the exit bound and finished by the next process; a process killed with SIGKILL
// mid-compile leaves no compiler running, and the next process cleans what it left. The
// compiler is a script around c++ that, when asked to, first runs a long `sleep` of its own (as
// the driver runs cc1plus), so that "the compiler outlived its process" is observable.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <streamfuse/streamfuse.h>

#include "tests/file_text.h"
#include "tests/jit/chain_program.h"
#include "tests/temp_dir.h"

extern char** environ;

namespace sf = streamfuse;
namespace fs = std::filesystem;

namespace streamfuse::cache {
namespace {

using Clock = std::chrono::steady_clock;
using jit::have_compiler;
using streamfuse::testing::TempDir;

// ---- the child: SF_EXIT_CHILD=chain|idle ------------------------------------------------------

// chain: the program, one small fused chain, then return without waiting for anything.
// idle: one op, so the library starts (and takes what an earlier process handed on).
TEST(ExitChild, Run) {
  const char* mode = std::getenv("SF_EXIT_CHILD");
  if (!mode) GTEST_SKIP() << "run by the ExitCompiles tests in a child process";
  float sum = 0;
  if (std::string(mode) == "chain") {
    sf::manual_seed(3);
    const sf::Tensor x = sf::randn({4096});
    const sf::Tensor y =
        x * (sf::erf(x / std::sqrt(2.0f)) + 1.0f) / 2.0f * sf::sigmoid(x) + sf::tanh(x) * 0.25f;
    sum = sf::sum(y).item<float>();
  } else {
    sum = sf::sum(sf::ones({4})).item<float>();
  }
  const sf::FusionStats s = sf::fusion_stats();
  std::printf(
      "result compiled_launches=%lld interpreted=%lld kernels_loaded=%lld "
      "kernels_compiled=%lld sum=%.6f\n",
      static_cast<long long>(s.compiled_launches), static_cast<long long>(s.interpreted_launches),
      static_cast<long long>(s.kernels_loaded), static_cast<long long>(s.kernels_compiled),
      static_cast<double>(sum));
  std::fflush(stdout);
}

// ---- the parent -------------------------------------------------------------------------------

// A compiler that, with SF_SLOW_COMPILER_MARK set, creates that file and then waits for a
// grandchild `sleep 60` before compiling; otherwise it is c++. Its path, size and time stay the
// same between children, so every child has the same kernel fingerprint.
std::string slow_compiler(const TempDir& dir) {
  return dir.write("slow-c++",
                   "#!/bin/sh\n"
                   "case \"$1\" in --version|-dumpversion|-dumpfullversion|-v) exec c++ \"$@\";; "
                   "esac\n"
                   "if [ -n \"$SF_SLOW_COMPILER_MARK\" ]; then\n"
                   "  : > \"$SF_SLOW_COMPILER_MARK\"\n"
                   "  sleep 60 &\n"
                   "  wait\n"
                   "fi\n"
                   "exec c++ \"$@\"\n",
                   /*executable=*/true);
}

struct Child {
  pid_t pid = -1;
  fs::path out, err;
};

// Starts this binary as SF_EXIT_CHILD=`mode` with `env` added, its output in files of `dir`.
Child start_child(const TempDir& dir, const std::string& mode,
                  const std::vector<std::string>& env) {
  static int n = 0;
  Child c;
  c.out = fs::path(dir.path()) / ("child" + std::to_string(++n) + ".out");
  c.err = fs::path(dir.path()) / ("child" + std::to_string(n) + ".err");
  std::vector<std::string> vars = env;
  vars.push_back("SF_EXIT_CHILD=" + mode);
  for (char** e = environ; *e; ++e) {
    const std::string v = *e;
    if (v.rfind("SF_", 0) != 0 && v.rfind("STREAMFUSE_", 0) != 0) vars.push_back(v);
  }
  std::vector<char*> envp;
  for (std::string& v : vars) envp.push_back(v.data());
  envp.push_back(nullptr);
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  std::string filter = "--gtest_filter=ExitChild.Run";
  char* argv[] = {const_cast<char*>(self.c_str()), filter.data(), nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, c.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, c.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  EXPECT_EQ(posix_spawn(&c.pid, self.c_str(), &actions, nullptr, argv, envp.data()), 0);
  posix_spawn_file_actions_destroy(&actions);
  return c;
}

struct Result {
  std::map<std::string, std::string> fields;
  std::string err;
  double seconds = 0;
  long long operator[](const std::string& k) const {
    const auto it = fields.find(k);
    return it == fields.end() ? -1 : std::stoll(it->second);
  }
};

Result finish_child(const Child& c, Clock::time_point started) {
  int status = 0;
  EXPECT_EQ(waitpid(c.pid, &status, 0), c.pid);
  Result r;
  r.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  const std::string out = streamfuse::testing::read_all(c.out);
  r.err = streamfuse::testing::read_all(c.err);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out << r.err;
  const std::size_t at = out.find("result ");
  EXPECT_NE(at, std::string::npos) << out << r.err;
  if (at == std::string::npos) return r;
  std::istringstream line(out.substr(at + 7, out.find('\n', at) - at - 7));
  for (std::string f; line >> f;) r.fields[f.substr(0, f.find('='))] = f.substr(f.find('=') + 1);
  return r;
}

Result run_child(const TempDir& dir, const std::string& mode, const std::vector<std::string>& env) {
  const auto started = Clock::now();
  return finish_child(start_child(dir, mode, env), started);
}

// The files under `root` whose path contains `part`.
std::vector<std::string> files_with(const fs::path& root, const std::string& part) {
  std::vector<std::string> found;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->path().string().find(part) != std::string::npos) found.push_back(it->path().string());
  return found;
}

// This process adopts what its children leave running (PR_SET_CHILD_SUBREAPER), so that a
// compiler that outlived its process becomes visible here instead of under init.
void adopt_orphans() { ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0); }

// Reaps every descendant left, waiting up to `within` for them to end; returns the command lines
// of those still running then (which are killed, so that the test leaves nothing behind).
std::vector<std::string> descendants_left_after(std::chrono::milliseconds within) {
  const auto deadline = Clock::now() + within;
  for (;;) {
    const pid_t reaped = waitpid(-1, nullptr, WNOHANG);
    if (reaped < 0) return {};  // ECHILD: none left
    if (reaped > 0) continue;
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;  // not a process
    const std::string stat = streamfuse::testing::read_all(e.path() / "stat");
    const std::size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state = 0;
    pid_t parent = 0;
    rest >> state >> parent;
    if (parent != getpid()) continue;
    left.push_back(streamfuse::testing::read_all(e.path() / "cmdline") + " (state " + state + ")");
    kill(std::stoi(name), SIGKILL);
  }
  while (waitpid(-1, nullptr, 0) > 0) {
  }
  return left;
}

bool wait_for_file(const fs::path& file, std::chrono::seconds within) {
  const auto deadline = Clock::now() + within;
  while (!fs::exists(file)) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

TEST(ExitCompiles, AShortProcessLeavesItsKernelsAndTheNextOneStartsCompiled) {
  REQUIRE_COMPILER();
  TempDir dir;
  const std::string cache = "STREAMFUSE_CACHE_DIR=" + dir.path() + "/cache";
  const Result first = run_child(dir, "chain", {cache});
  EXPECT_EQ(first["compiled_launches"], 0);  // it ran before its compile finished
  const Result second = run_child(dir, "chain", {cache, "STREAMFUSE_LOG=jit"});
  EXPECT_GT(second["compiled_launches"], 0) << second.err;
  EXPECT_EQ(second["interpreted"], 0) << second.err;
  EXPECT_EQ(second["kernels_compiled"], 0) << second.err;
  EXPECT_EQ(second.fields.at("sum"), first.fields.at("sum"));
  EXPECT_TRUE(files_with(dir.path() + "/cache/scratch", "").empty());
}

TEST(ExitCompiles, ACompileStillRunningAtExitIsHandedOnAndItsCompilerStopped) {
  REQUIRE_COMPILER();
  adopt_orphans();
  TempDir dir;
  const std::string cache = "STREAMFUSE_CACHE_DIR=" + dir.path() + "/cache";
  const std::string cxx = "STREAMFUSE_CXX=" + slow_compiler(dir);
  const fs::path mark = fs::path(dir.path()) / "compile-started";
  const Result slow =
      run_child(dir, "chain", {cache, cxx, "SF_SLOW_COMPILER_MARK=" + mark.string()});
  EXPECT_TRUE(fs::exists(mark)) << slow.err;  // the compile was running at exit
  // The exit waits about two seconds for the compile (kExitCompileBudget), not its 60.
  EXPECT_LT(slow.seconds, 20.0);
  EXPECT_EQ(slow.err.find("warning"), std::string::npos) << slow.err;
  const std::vector<std::string> left = descendants_left_after(std::chrono::seconds(3));
  EXPECT_TRUE(left.empty()) << "still running after the exit: " << left.front();
  ASSERT_EQ(files_with(dir.path() + "/cache", ".pending").size(), 1u);

  // The next process, whatever it runs, compiles what was handed on; the one after starts hot.
  const Result next = run_child(dir, "idle", {cache, cxx, "STREAMFUSE_LOG=jit"});
  EXPECT_NE(next.err.find("an earlier process asked for"), std::string::npos) << next.err;
  EXPECT_TRUE(files_with(dir.path() + "/cache", ".pending").empty());
  const Result hot = run_child(dir, "chain", {cache, cxx, "STREAMFUSE_LOG=jit,cache"});
  EXPECT_GT(hot["compiled_launches"], 0) << next.err << hot.err;
  EXPECT_EQ(hot["interpreted"], 0);
  EXPECT_EQ(hot["kernels_compiled"], 0);
  EXPECT_EQ(hot.fields.at("sum"), slow.fields.at("sum"));
}

TEST(ExitCompiles, AProcessKilledMidCompileLeavesNoCompilerAndTheNextProcessCleansUp) {
  REQUIRE_COMPILER();
  adopt_orphans();
  TempDir dir;
  const fs::path root = fs::path(dir.path()) / "cache";
  const std::string cache = "STREAMFUSE_CACHE_DIR=" + root.string();
  const std::string cxx = "STREAMFUSE_CXX=" + slow_compiler(dir);
  const fs::path mark = fs::path(dir.path()) / "compile-started";
  const Child victim =
      start_child(dir, "chain", {cache, cxx, "SF_SLOW_COMPILER_MARK=" + mark.string()});
  ASSERT_TRUE(wait_for_file(mark, std::chrono::seconds(60)));
  kill(victim.pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(victim.pid, &status, 0), victim.pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  const std::vector<std::string> left = descendants_left_after(std::chrono::seconds(3));
  EXPECT_TRUE(left.empty()) << "still running after SIGKILL: " << left.front();
  // Its build folder (the generated source) stays until a process finds it abandoned.
  EXPECT_FALSE(files_with(root / "scratch", ".cpp").empty());

  const Result next = run_child(dir, "idle", {cache});
  EXPECT_TRUE(files_with(root / "scratch", std::to_string(victim.pid)).empty());
  EXPECT_TRUE(files_with(root / "scratch", "").empty());
  EXPECT_TRUE(files_with(root, ".tmp").empty());
}

}  // namespace
}  // namespace streamfuse::cache
