// A test program's own cache directory, empty, for tests that assert which plans are explored or
// how many kernels run: plans another build or test stored in a shared directory (a cache
// directory outlives builds) would be matched instead of explored, and a plan learned in another
// context (a chain cut by a sync, a build whose builders differed) is still a valid plan.
//
// Include it in one file of the test program: it sets STREAMFUSE_CACHE_DIR during static
// initialization, before any device starts (devices read it once), and the directory lives until
// the program ends: it is removed after the runtime's exit handler (registered later, so run
// earlier) has flushed its plans and stopped compiling.
#pragma once

#include <stdlib.h>

#include "tests/temp_dir.h"

namespace streamfuse::testing {

inline const TempDir& own_cache_dir() {
  static const TempDir dir;
  static const bool exported = setenv("STREAMFUSE_CACHE_DIR", dir.path().c_str(), 1) == 0;
  (void)exported;
  return dir;
}

namespace {
[[maybe_unused]] const TempDir& kOwnCacheDir = own_cache_dir();
}

}  // namespace streamfuse::testing
