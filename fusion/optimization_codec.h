// How an optimization kind persists: its codec, found by the name its optimizations' codec()
// returns (fusion/builders/registry.h lists the kinds).
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "cache/archive.h"
#include "core/ir.h"
#include "fusion/optimization.h"

namespace streamfuse::fusion {

// One Optimization class's persistence. decode() checks every index against the plan's ops, so
// a decoded optimization is as safe to run as a built one.
struct OptimizationCodec {
  std::string_view name;
  void (*encode)(cache::OutArchive& out, const Optimization& optimization);
  std::shared_ptr<Optimization> (*decode)(cache::InArchive& in, std::span<const core::OpDesc> ops);
};

}  // namespace streamfuse::fusion
