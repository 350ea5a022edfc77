// STREAMFUSE_LOG=cache: one line per hit, miss, rejection, write and prune.
#pragma once

#include <string>

#include "core/log.h"

namespace streamfuse::cache {

inline bool cache_logging() { return core::log_enabled(core::LogChannel::kCache); }
inline void cache_log(const std::string& line) {
  if (cache_logging()) core::log_line(core::LogChannel::kCache, line);
}

}  // namespace streamfuse::cache
