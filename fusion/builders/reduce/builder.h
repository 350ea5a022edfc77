// ReduceBuilder: fuses element-wise ops, one or more reductions over one axis of one shape, and
// the element-wise ops that use their results into one kernel with a reduction anchor
// (jit/program.h): softmax, layer_norm, RMSNorm, x - mean(x), log(sum(exp(x - max))), sum(x * x).
//
// Values of the segment live at one of two levels of the reduced shape S along axis a:
// - per element: of shape S (ops before the first reduction have S's shape, the reductions
//   reduce such values);
// - per row: of the reduced shape (S with a of size 1, or without a): reduction results and ops
//   over them.
// An element-wise op of shape S may read both (a per-row value broadcast along a, as keepdim
// results broadcast); an op of the reduced shape reads per-row values and inputs that do not
// vary along a. Anything else closes the builder: the element-wise builder and this one compete,
// and the explorer keeps the one that saves more memory traffic. Reductions over an axis with
// dimensions of more than one element after it are not taken (see take_reduce).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <boost/unordered/unordered_flat_map.hpp>

#include "fusion/builder.h"
#include "fusion/trace.h"
#include "jit/program.h"

namespace streamfuse::fusion {

class ReduceBuilder final : public OptimizationBuilder {
 public:
  void register_op(const core::OpDesc& relative, const core::OpDesc& global) override;
  BuilderStatus status() const override { return status_; }
  bool may_start_with(core::OpKind kind) const override;
  std::size_t len() const override { return len_; }
  std::int64_t score() const override;
  std::unique_ptr<Optimization> build() const override;
  void reset() override;

 private:
  // kConstant: made by full() in the segment, a scalar argument wherever it is read.
  enum class Level : std::uint8_t { kExternal, kElement, kRow, kConstant };
  struct Value {
    Level level = Level::kExternal;
    std::int32_t reg = -1;  // kElement, kRow, kConstant: its register
    DType dtype = kF32;
    Shape shape;             // relative sizes
    std::int64_t bytes = 0;  // at the sizes explored
    TensorSource source;
    bool dies = false;
    std::int32_t loads[2] = {-1, -1};  // kExternal: its load per element / per row
  };

  bool take(const core::OpDesc& rel, const core::OpDesc& real);
  bool take_reduce(const core::OpDesc& rel, const core::OpDesc& real);
  bool take_elementwise(const core::OpDesc& rel, const core::OpDesc& real);
  bool take_full(const core::OpDesc& rel, const core::OpDesc& real);
  Value& value(const core::TensorDesc& rel, const core::TensorDesc& real, TensorSource source);
  // Whether a per-row value of shape `s` broadcasts into S as the row it belongs to.
  bool row_broadcasts(const Shape& s) const;
  std::int32_t emit(bool per_row, jit::Instruction in, jit::ValueType type);
  std::int32_t operand(bool per_row, core::TensorId id, jit::ValueType type);
  std::int32_t scalar(TensorSource op_source, jit::ScalarArg arg);
  bool operand_limit_reached(std::size_t more) const;
  // Whether every constant a handle still holds has a shape the kernel writes (S or reduced).
  bool storable() const;

  BuilderStatus status_ = BuilderStatus::kOpen;
  std::size_t len_ = 0;
  bool anchored_ = false;  // a reduction was taken: shape_ and the program's axis are fixed
  bool has_shape_ = false;
  Shape shape_;               // S (relative), once an element-wise op or a reduction set it
  std::int64_t row_len_ = 0;  // elements per row, at the sizes explored
  TensorSource shape_source_;
  jit::FusedProgram program_;
  std::vector<jit::ValueType> types_;   // per register
  std::vector<bool> per_row_;           // per register
  std::vector<core::TensorId> inputs_;  // per program input
  std::vector<ScalarSource> scalars_;   // per program scalar argument
  boost::unordered_flat_map<std::uint64_t, std::int32_t> scalar_regs_;  // by source and type
  boost::unordered_flat_map<std::uint64_t, std::int32_t> converted_;    // (reg, type) -> reg
  boost::unordered_flat_map<core::TensorId, Value> values_;
  std::vector<core::TensorId> order_;  // values in order of first appearance
  std::int64_t unfused_bytes_ = 0;
};

}  // namespace streamfuse::fusion
