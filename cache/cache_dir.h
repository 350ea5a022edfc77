// Where streamfuse keeps what it learns about programs (plans, compiled kernels).
#pragma once

#include <filesystem>

#include "streamfuse/config.h"

namespace streamfuse::cache {

// Config::cache_dir (STREAMFUSE_CACHE_DIR) when set, else $XDG_CACHE_HOME/streamfuse, else
// ~/.cache/streamfuse, else a streamfuse folder in the system's temporary directory. Not created.
std::filesystem::path cache_directory(const Config& config);

}  // namespace streamfuse::cache
