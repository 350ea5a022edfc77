// run_child_process: output and exit status; a program that leaves a child of its own running
// (holding the output pipe) neither holds the call up nor outlives it; a timeout kills the whole
// group; stop_child_processes() is tested end to end (tests/cache/exit_test.cpp), since it stops
// every later call in the process.
#include "jit/child_process.h"

#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "tests/file_text.h"
#include "tests/temp_dir.h"

namespace streamfuse::jit {
namespace {

using Clock = std::chrono::steady_clock;
using streamfuse::testing::TempDir;

// Whether process `pid` has ended within a second (gone, or a zombie: the test's orphans are
// reaped by init, or by nobody in a container whose init does not reap).
bool ended_soon(pid_t pid) {
  const std::string stat_file = "/proc/" + std::to_string(pid) + "/stat";
  for (int i = 0; i < 100; ++i) {
    const std::string stat = streamfuse::testing::read_all(stat_file);
    if (stat.empty() || stat.find(") Z") != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

pid_t pid_in(const std::string& file) { return std::stoi(streamfuse::testing::read_all(file)); }

TEST(ChildProcess, CollectsOutputAndExitStatus) {
  const ChildResult r = run_child_process({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"},
                                          std::chrono::seconds(10));
  EXPECT_TRUE(r.started);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.output, "out\nerr\n");
}

TEST(ChildProcess, AProgramNotFoundIsNotStarted) {
  const ChildResult r = run_child_process({"/nonexistent/program"}, std::chrono::seconds(10));
  EXPECT_FALSE(r.started);
}

TEST(ChildProcess, WhatTheProgramLeftRunningEndsWithIt) {
  TempDir dir;
  const std::string pid_file = dir.path() + "/pid";
  const auto start = Clock::now();
  // The background sleep keeps stdout open after its parent exited, as a compiler's helper can.
  const ChildResult r =
      run_child_process({"/bin/sh", "-c", "sleep 30 & echo $! > '" + pid_file + "'; exit 0"},
                        std::chrono::seconds(20));
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(ended_soon(pid_in(pid_file)));  // killed with its group
}

TEST(ChildProcess, ATimeoutKillsTheWholeGroup) {
  TempDir dir;
  const std::string pid_file = dir.path() + "/pid";
  const auto start = Clock::now();
  const ChildResult r =
      run_child_process({"/bin/sh", "-c", "sleep 30 & echo $! > '" + pid_file + "'; wait"},
                        std::chrono::milliseconds(300));
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  EXPECT_TRUE(ended_soon(pid_in(pid_file)));
}

}  // namespace
}  // namespace streamfuse::jit
