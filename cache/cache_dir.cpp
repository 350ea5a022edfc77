#include "cache/cache_dir.h"

#include <cstdlib>

namespace streamfuse::cache {

std::filesystem::path cache_directory(const Config& config) {
  if (!config.cache_dir.empty()) return config.cache_dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::filesystem::path(xdg) / "streamfuse";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::filesystem::path(home) / ".cache" / "streamfuse";
  std::error_code ec;
  return std::filesystem::temp_directory_path(ec) / "streamfuse";
}

}  // namespace streamfuse::cache
