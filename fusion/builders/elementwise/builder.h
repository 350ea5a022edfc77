// ElementwiseBuilder: fuses a segment's element-wise ops (unary, binary, compare, logical, where,
// cast, scalar operands, constants from full(), and reads at indices: index_select, gather,
// embedding) into kernels, one per iteration shape: a trace
// (fusion/trace.h) whose blocks each run as a kernel with no anchor. Anything the trace does not
// take closes the builder.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/cpu/kernels/layout.h"
#include "fusion/builder.h"
#include "fusion/trace.h"

namespace streamfuse::fusion {

class ElementwiseBuilder final : public OptimizationBuilder {
 public:
  static constexpr std::size_t kMaxGroups = 4;
  // Tensors one kernel reads and writes at most: what a kernel launch takes.
  static constexpr std::size_t kMaxKernelOperands = backends::cpu::kMaxOperands;

  void register_op(const core::OpDesc& relative, const core::OpDesc& global) override;
  BuilderStatus status() const override { return status_; }
  bool may_start_with(core::OpKind kind) const override { return trace_.may_start_with(kind); }
  std::size_t len() const override { return len_; }
  std::int64_t score() const override { return trace_.saved_bytes(); }
  std::unique_ptr<Optimization> build() const override;
  void reset() override;

 private:
  BuilderStatus status_ = BuilderStatus::kOpen;
  std::size_t len_ = 0;
  Trace trace_{{kMaxGroups, kMaxKernelOperands, true}};
};

}  // namespace streamfuse::fusion
