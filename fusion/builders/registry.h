// The one list of optimization kinds. A kind is a folder, fusion/builders/<kind>/: its builder,
// the optimization it builds and that optimization's codec. Adding one is that folder and one
// line in registry.cpp; a kind may also be added at run time (add_optimization_kind), as the
// tests' mock kind is.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "backends/backend.h"
#include "fusion/builder.h"
#include "fusion/optimization_codec.h"

namespace streamfuse::fusion {

struct OptimizationKind {
  std::string_view name;  // what its optimizations' codec() returns
  std::unique_ptr<OptimizationBuilder> (*make_builder)();
  const OptimizationCodec* codec;  // null: its plans are not persisted
  // Whether a device with this backend gets the kind's builder; null: every device.
  bool (*applies)(const backends::Backend& backend) = nullptr;
};

// Adds a kind after those built in; streams made later use its builder. Throws Error when the
// name is taken.
void add_optimization_kind(const OptimizationKind& kind);
// A new builder of every kind that applies to `backend`'s device, in the list's order (a
// stream's explorer gets one set).
std::vector<std::unique_ptr<OptimizationBuilder>> make_builders(const backends::Backend& backend);
// The codec of the kind named `name`; null when no kind of that name persists.
const OptimizationCodec* codec_named(std::string_view name);

}  // namespace streamfuse::fusion
