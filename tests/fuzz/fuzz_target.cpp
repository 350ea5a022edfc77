#include "tests/fuzz/fuzz_target.h"

#include <stdlib.h>

#include <cstdio>
#include <filesystem>

namespace streamfuse::fuzz {

void set_up_process() {
  // A directory of this process's own: a fuzz run must not fill the user's cache, and plans it
  // records while making seeds must not come back from a previous run.
  if (!getenv("STREAMFUSE_CACHE_DIR")) {
    char dir[] = "/tmp/streamfuse-fuzz-XXXXXX";
    if (mkdtemp(dir)) {
      setenv("STREAMFUSE_CACHE_DIR", dir, 1);
      static const std::string removed = dir;
      atexit([] {
        std::error_code ec;
        std::filesystem::remove_all(removed, ec);
      });
    }
  }
  setenv("STREAMFUSE_JIT", "interpret", 1);
}

void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz target: %s\n", what.c_str());
  std::fflush(stderr);
  abort();
}

}  // namespace streamfuse::fuzz
