// Helper programs (the system C++ compiler) run so that none outlives this process, however it
// ends. Each is a child of this process in a process group of its own, which what it starts
// (cc1plus, as, ld) joins. The group's leader, started first, is a watcher (/bin/sh) that blocks
// reading a lifeline pipe whose write end only this process holds. When this process ends (it
// returns from main, crashes, or is killed with SIGKILL) the kernel closes that end; the watcher
// reads end-of-file and kills the whole group. A process-wide signal such as PR_SET_PDEATHSIG
// would reach the driver alone, and its children would run on for the length of a compile.
// While this process lives it reaps both, so no zombie is left either.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace streamfuse::jit {

struct ChildResult {
  bool started = false;    // false: the program (or its watcher) could not be started
  bool timed_out = false;  // ran past its timeout and was killed
  bool stopped = false;    // killed by stop_child_processes()
  int exit_code = -1;      // -1 when killed by a signal
  std::string output;      // stdout and stderr together, truncated to 64 KiB
};

// Runs `argv` (argv[0] looked up on PATH, no shell expansion of any argument) with stdin from
// /dev/null, collecting its output. Past `timeout` its process group is killed. Thread-safe.
ChildResult run_child_process(const std::vector<std::string>& argv,
                              std::chrono::milliseconds timeout);

// Kills the process group of every child process now running, and makes later calls start
// nothing (they return with `stopped`): for the exit of this process, so that a compile it no
// longer waits for stops at once instead of running on.
void stop_child_processes();

}  // namespace streamfuse::jit
