// A small optimization kind of the tests' own, to show that a kind is one folder plus one
// registration: MockBuilder takes runs of abs ops (and nothing else) and claims to save more
// traffic than any other builder; MockOptimization runs them one by one through the eager path
// and counts its runs; its codec persists it. Nothing outside this folder and the registry
// (fusion/builders/registry.h) knows it.
#pragma once

#include <atomic>
#include <cstdint>

#include "fusion/builders/registry.h"

namespace streamfuse::testing::mock_kind {

// The kind, for fusion::add_optimization_kind.
fusion::OptimizationKind kind();
// Segments run by a MockOptimization in this process.
std::atomic<std::int64_t>& runs();

}  // namespace streamfuse::testing::mock_kind
