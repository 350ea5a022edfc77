// STREAMFUSE_LOG=cache: one line per hit, miss, rejection, write and prune.
#pragma once

#include <string>

#include "stream/log.h"

namespace streamfuse::cache {

inline bool cache_logging() { return stream::log_enabled(stream::LogChannel::kCache); }
inline void cache_log(const std::string& line) {
  if (cache_logging()) stream::log_line(stream::LogChannel::kCache, line);
}

}  // namespace streamfuse::cache
