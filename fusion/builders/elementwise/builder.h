// ElementwiseBuilder: fuses a segment's element-wise ops (unary, binary, compare, logical, where,
// cast, scalar operands, constants from full()) into kernels, one per iteration shape.
//
// Ops join the kernel ("group") of their output shape; inputs broadcast into it. A group runs
// after the groups before it, so an op joins the first group of its shape that comes after every
// group producing one of its inputs, or opens a new group. Drops are absorbed (they only tell
// which values die). Anything else closes the builder.
//
// What is written to memory: a value made in the segment is stored only if a handle still holds
// it at the end of the segment, or a later group reads it. A value whose last use is in the
// segment (moved into an op, or dropped) may lend its buffer to an output of its last reader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <boost/unordered/unordered_flat_map.hpp>

#include "fusion/builder.h"
#include "fusion/builders/elementwise/optimization.h"
#include "jit/program.h"

namespace streamfuse::fusion {

class ElementwiseBuilder final : public OptimizationBuilder {
 public:
  static constexpr std::size_t kMaxGroups = 4;
  // Tensors one kernel reads and writes at most (backends/cpu/kernels/layout.h kMaxOperands).
  static constexpr std::size_t kMaxKernelOperands = 64;

  void register_op(const core::OpDesc& relative, const core::OpDesc& global) override;
  BuilderStatus status() const override { return status_; }
  std::size_t len() const override { return len_; }
  std::int64_t score() const override;
  std::unique_ptr<Optimization> build() const override;
  void reset() override;

 private:
  enum class Origin : std::uint8_t { kExternal, kGroup, kConstant };
  struct Value {
    Origin origin = Origin::kExternal;
    std::int32_t group = -1;  // kGroup: the producing group
    std::int32_t reg = -1;    // kGroup: its register there
    DType dtype = kF32;
    Shape shape;             // relative sizes
    std::int64_t bytes = 0;  // at the sizes explored (for the score)
    TensorSource source;
    ScalarSource constant;          // kConstant: the full() value
    bool dies = false;              // dropped, or moved into an op, within the segment
    std::int32_t last_reader = -1;  // the last group reading it
  };
  struct Group {
    Shape shape;
    TensorSource shape_source;
    jit::FusedProgram program;
    std::vector<jit::ValueType> types;                               // per register
    boost::unordered_flat_map<core::TensorId, std::int32_t> regs;  // values available here
    std::vector<core::TensorId> inputs;                            // per program input
    std::vector<core::TensorId> produced;                          // in order
    std::vector<ScalarSource> scalars;                               // per program scalar argument
    boost::unordered_flat_map<std::uint64_t, std::int32_t> scalar_regs;  // by source
    boost::unordered_flat_map<std::uint64_t, std::int32_t> converted;    // (reg, type) -> reg
  };

  bool accept(const core::OpDesc& rel, const core::OpDesc& real);
  Value& value(core::TensorId id, const core::TensorDesc& real, TensorSource source);
  std::int32_t choose_group(const core::OpDesc& rel);
  // Emits instructions into group g; returns the new register.
  std::int32_t emit(Group& g, jit::Instruction in, jit::ValueType result);
  // The register of `id` in group g converted to `type` (loading or materializing it first).
  std::int32_t operand(Group& g, std::int32_t gi, core::TensorId id, jit::ValueType type);
  std::int32_t scalar(Group& g, ScalarSource src, jit::ScalarArg arg);
  void emit_op(Group& g, std::int32_t gi, const core::OpDesc& rel, std::uint32_t op_index);
  // Whether a value made in the segment is written to memory.
  bool stored(const Value& v) const;

  BuilderStatus status_ = BuilderStatus::kOpen;
  std::size_t len_ = 0;
  std::int64_t unfused_bytes_ = 0;
  boost::unordered_flat_map<core::TensorId, Value> values_;
  std::vector<core::TensorId> order_;  // values in order of first appearance
  std::vector<Group> groups_;
};

}  // namespace streamfuse::fusion
