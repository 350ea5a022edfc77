// OptimizationBuilder: takes a segment's ops one at a time until it must close, then builds an
// Optimization over the ops it accepted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/ir.h"
#include "fusion/optimization.h"

namespace streamfuse::fusion {

enum class BuilderStatus : std::uint8_t { kOpen, kClosed };

class OptimizationBuilder {
 public:
  virtual ~OptimizationBuilder() = default;
  // Offers the segment's next op (relative form, and the global form for sizes). The builder
  // accepts it, or closes and ignores it and every later op.
  virtual void register_op(const core::OpDesc& relative, const core::OpDesc& global) = 0;
  virtual BuilderStatus status() const = 0;
  // Whether this builder may take an op of `kind` as a segment's first op. An op of a kind no
  // builder may start with runs on its own when it reaches the head of the queue, without
  // matching or a plan (fusion/processor.h). Drops never start one: at the head, every op that
  // read the dropped tensor has run, so a kernel gains nothing from freeing it.
  virtual bool may_start_with(core::OpKind kind) const = 0;
  // Ops accepted: the optimization covers the segment's first len() ops.
  virtual std::size_t len() const = 0;
  // Memory traffic saved, in bytes: read and written unfused minus read and written fused,
  // at the sizes seen. Positive when building is worth it.
  virtual std::int64_t score() const = 0;
  // Whether the ops this builder takes after the segment's first op would save as many bytes in
  // the kernel that reads the first op's result (a product's bias add or scaling, which a
  // softmax's or an activation's kernel takes as well). The explorer then weighs the segment
  // split after the first op against this builder's plan, and keeps the split on a tie: the
  // consumer's kernel applies the steps in any layout, the library only in some.
  virtual bool lends_steps() const { return false; }
  // The optimization over the accepted ops; requires len() > 0.
  virtual std::unique_ptr<Optimization> build() const = 0;
  // Forgets everything: ready for a new segment.
  virtual void reset() = 0;
};

}  // namespace streamfuse::fusion
