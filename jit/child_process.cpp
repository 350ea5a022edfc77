#include "jit/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <mutex>

extern char** environ;

namespace streamfuse::jit {
namespace {

constexpr std::size_t kMaxOutput = 64 * 1024;  // kept for error messages

// The watcher, run as `sh -c kWatcher` with the lifeline as its stdin: nothing is ever written to
// the lifeline, so the read returns only when this process closed its end, i.e. ended; it then
// kills its process group (the program's), itself included.
constexpr const char* kWatcher = "read -r x; kill -s KILL 0";

// The process groups of the programs running now (a watcher's pid is its group's id), and
// whether stop_child_processes() was called.
struct Running {
  std::mutex mutex;
  std::vector<pid_t> groups;
  bool stopped = false;
};
Running& running() {
  static Running* r = new Running;  // never destroyed: used by exit handlers
  return *r;
}

void close_pipe(int fds[2]) {
  close(fds[0]);
  close(fds[1]);
}

// posix_spawn attributes for a child in process group `group` (0: a new one, led by the child),
// with default signal dispositions and an empty mask: the program must not inherit a blocked
// SIGTERM or an ignored SIGCHLD from whatever thread of this process spawned it.
struct SpawnAttributes {
  posix_spawnattr_t attr;
  explicit SpawnAttributes(pid_t group) {
    posix_spawnattr_init(&attr);
    sigset_t all, none;
    sigfillset(&all);
    sigemptyset(&none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(
        &attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    posix_spawnattr_setpgroup(&attr, group);
  }
  ~SpawnAttributes() { posix_spawnattr_destroy(&attr); }
  SpawnAttributes(const SpawnAttributes&) = delete;
  SpawnAttributes& operator=(const SpawnAttributes&) = delete;
};

// Starts `argv` (looked up on PATH) in process group `group`, stdin from /dev/null, stdout and
// stderr on `output`; its pid, or -1 (glibc's posix_spawnp reports a failed exec).
pid_t spawn_program(const std::vector<std::string>& argv, int output, pid_t group) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, output, 1);
  posix_spawn_file_actions_adddup2(&actions, output, 2);
  SpawnAttributes spawn(group);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &actions, &spawn.attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

// Starts the watcher, reading `lifeline`, as the leader of a new process group (its pid is the
// group's id); its pid, or -1.
pid_t spawn_watcher(int lifeline) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, lifeline, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  SpawnAttributes spawn(0);
  char* args[] = {const_cast<char*>("/bin/sh"), const_cast<char*>("-c"),
                  const_cast<char*>(kWatcher), nullptr};
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, "/bin/sh", &actions, &spawn.attr, args, environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

// Registers a running group; false (and nothing registered) once stop_child_processes() ran.
bool add_group(pid_t group) {
  Running& r = running();
  std::lock_guard lock(r.mutex);
  if (r.stopped) return false;
  r.groups.push_back(group);
  return true;
}

// Unregisters `group`; whether stop_child_processes() killed it meanwhile.
bool remove_group(pid_t group) {
  Running& r = running();
  std::lock_guard lock(r.mutex);
  r.groups.erase(std::remove(r.groups.begin(), r.groups.end(), group), r.groups.end());
  return r.stopped;
}

void reap(pid_t pid, int* status) {
  while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
  }
}

// Appends what `fd` holds now (without blocking) to `out`, up to kMaxOutput; false at end of
// file or on an error.
bool drain(int fd, std::string& out) {
  char buf[4096];
  for (;;) {
    const ssize_t got = read(fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return errno == EAGAIN;
    if (got == 0) return false;
    if (out.size() < kMaxOutput) out.append(buf, static_cast<std::size_t>(got));
  }
}

}  // namespace

ChildResult run_child_process(const std::vector<std::string>& argv,
                              std::chrono::milliseconds timeout) {
  ChildResult r;
  if (argv.empty()) return r;
  {
    Running& state = running();
    std::lock_guard lock(state.mutex);
    if (state.stopped) {
      r.stopped = true;
      return r;
    }
  }
  // Both pipes close-on-exec here: the spawned programs get only what is dup2'ed onto their
  // standard descriptors.
  int output[2], lifeline[2];
  if (pipe2(output, O_CLOEXEC) != 0) return r;
  if (pipe2(lifeline, O_CLOEXEC) != 0) {
    close_pipe(output);
    return r;
  }
  // The watcher first, leading the group the program then joins: should this process die at
  // any moment after this, the group, program included, dies with it.
  const pid_t group = spawn_watcher(lifeline[0]);
  close(lifeline[0]);
  const pid_t pid = group < 0 ? -1 : spawn_program(argv, output[1], group);
  close(output[1]);
  if (pid < 0) {
    if (group >= 0) {
      kill(group, SIGKILL);
      reap(group, nullptr);
    }
    close(output[0]);
    close(lifeline[1]);
    return r;
  }
  if (!add_group(group)) kill(-group, SIGKILL);  // the process is exiting: run nothing
  fcntl(output[0], F_SETFL, fcntl(output[0], F_GETFL) | O_NONBLOCK);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  bool open = true;
  for (;;) {
    // Output until the program exits; its own children may hold the pipe open after it did.
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) break;  // not ours to wait for (SIGCHLD ignored): unknown
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      kill(-group, SIGKILL);
      reap(pid, &status);
      break;
    }
    const int wait_ms = static_cast<int>(std::min<long long>(left.count(), open ? 50 : 5));
    if (open) {
      pollfd p{output[0], POLLIN, 0};
      if (poll(&p, 1, wait_ms) > 0) open = drain(output[0], r.output);
    } else {
      poll(nullptr, 0, wait_ms);
    }
  }
  if (open) drain(output[0], r.output);
  close(output[0]);
  // The group's leftovers (what the program started and left running) and the watcher go with
  // it; the group's id cannot be reused before the watcher, its leader, is reaped.
  kill(-group, SIGKILL);
  reap(group, nullptr);
  close(lifeline[1]);
  r.stopped = remove_group(group);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  r.started = !r.stopped;
  return r;
}

void stop_child_processes() {
  Running& r = running();
  std::lock_guard lock(r.mutex);
  r.stopped = true;
  for (const pid_t group : r.groups) kill(-group, SIGKILL);
}

}  // namespace streamfuse::jit
