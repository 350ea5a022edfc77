// The persistence of kinds whose optimization is exactly what their builder makes of the plan's
// ops (matmul, product_chain): only how many ops it covers is written; decoding replays the
// builder over the plan's ops and requires it to take exactly those, so a decoded plan is one
// the builder would have made.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "cache/archive.h"
#include "core/ir.h"
#include "fusion/builder.h"
#include "fusion/optimization.h"

namespace streamfuse::fusion::replayed_codec {

inline void encode(cache::OutArchive& out, const Optimization& optimization) {
  out(static_cast<std::uint64_t>(optimization.len()));
}

// `builder` (fresh) replayed over `ops`; `kind` and `what` (what the builder takes) name them in
// the FormatError a plan it would not make gets.
inline std::shared_ptr<Optimization> decode(cache::InArchive& in, std::span<const core::OpDesc> ops,
                                            OptimizationBuilder& builder, std::string_view kind,
                                            std::string_view what) {
  std::uint64_t len = 0;
  in(len);
  if (len != ops.size())
    cache::bad_payload(std::string(kind) + " optimization covers " + std::to_string(len) +
                       " of the plan's " + std::to_string(ops.size()) + " ops");
  for (const core::OpDesc& op : ops) builder.register_op(op, op);
  if (builder.len() != ops.size())
    cache::bad_payload("the plan's ops are not " + std::string(what) + " the " + std::string(kind) +
                       " builder takes (it takes " + std::to_string(builder.len()) + " of " +
                       std::to_string(ops.size()) + ")");
  return std::shared_ptr<Optimization>(builder.build());
}

}  // namespace streamfuse::fusion::replayed_codec
