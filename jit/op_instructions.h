// The instructions one element-wise op becomes, emitted the same way by every builder of
// programs (the element-wise builder for fused segments, single_op_program for a device's eager
// path), so that an op computes the same bits fused and unfused.
#pragma once

#include <cstdint>

#include "core/ir.h"
#include "jit/program.h"

namespace streamfuse::jit {

// What a builder provides: its registers for the op's operands, and a place for instructions.
class OpEmitter {
 public:
  virtual ~OpEmitter() = default;
  // A register holding tensor input `i` of the op as type `type` (loaded, or converted).
  virtual std::int32_t operand(std::size_t i, ValueType type) = 0;
  // A register holding the op's scalar operand (scalars[0]) read as `arg`.
  virtual std::int32_t scalar(const ScalarArg& arg) = 0;
  // Appends `in` (its `out` is set here) whose result has type `result`; returns that register.
  virtual std::int32_t emit(Instruction in, ValueType result) = 0;
};

// Emits element-wise op `op` (unary, binary, compare, logical, where, cast; a scalar operand
// on the side attrs.scalar_side names) and returns the register of its result, rounded to the
// 16-bit grid when the output is f16 or bf16 (so registers hold what an unfused op stores).
// Throws Error for other kinds.
std::int32_t emit_elementwise_op(const core::OpDesc& op, OpEmitter& e);

}  // namespace streamfuse::jit
