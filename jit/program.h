// FusedProgram: one fused kernel, as element-wise blocks of straight-line code over virtual
// registers around an optional anchor. The block before the anchor is fused on read (a prologue:
// computed as the anchor loads its input), the block after it on write (an epilogue: computed on
// the anchor's result before it is stored). The anchor is none today: the prologue is the whole
// computation over one iteration shape and the epilogue is empty; the reduction and matrix
// product anchors come with their builders. Built by the fusion builders from the ops of a
// segment; run by the interpreter or compiled to a kernel. It holds no sizes and no scalar
// values, so one program serves every batch size and every constant.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/ir.h"
#include "streamfuse/dtype.h"

namespace streamfuse::jit {

// What a register holds: the compute type of a dtype (f16/bf16 compute in float; their values
// are rounded to the 16-bit grid by kRound, so registers hold exactly what unfused kernels
// store).
enum class ValueType : std::uint8_t { kFloat, kI32, kI64, kBool };
ValueType value_type_of(DType d);
// The dtype whose storage is the value type itself (f32, i32, i64, bool).
DType storage_dtype_of(ValueType t);
const char* value_type_name(ValueType t);

enum class InstrKind : std::uint8_t {
  kLoad,     // out = input[index], converted from its dtype to `type`
  kScalar,   // out = scalar argument [index] (already of `type`)
  kOp,       // out = op(args...) computed in `type`; compare and logical ops give kBool
  kConvert,  // out = args[0] converted from its register's type to `type` (saturating, wrapping)
  kRound,    // out = args[0] (float) rounded to `round` (f16 or bf16)
};

struct Instruction {
  InstrKind kind = InstrKind::kOp;
  core::OpKind op = core::OpKind::kAdd;  // kOp only
  ValueType type = ValueType::kFloat;    // kOp: the operands' type; others: the result's
  DType round = kF16;                    // kRound only
  std::int32_t out = 0;                  // register written
  std::int32_t index = 0;                // kLoad: input; kScalar: scalar argument
  std::int32_t args[3] = {-1, -1, -1};   // registers read

  friend bool operator==(const Instruction&, const Instruction&) = default;
};

// How a scalar argument's value is made from the op's Scalar (host side, at launch):
// - kOperand: the scalar operand of a binary/compare op, converted to `type` as the eager kernel
//   does (floats to float without 16-bit rounding);
// - kFill: the value of full(shape, s, dtype), i.e. converted to `dtype` as a fill stores it,
//   then widened to `type`.
struct ScalarArg {
  enum class Mode : std::uint8_t { kOperand, kFill };
  Mode mode = Mode::kOperand;
  ValueType type = ValueType::kFloat;
  DType dtype = kF32;  // kFill only

  friend bool operator==(const ScalarArg&, const ScalarArg&) = default;
};

struct ProgramOutput {
  std::int32_t reg = 0;
  DType dtype = kF32;

  friend bool operator==(const ProgramOutput&, const ProgramOutput&) = default;
};

// What a kernel is built around. kNone: every output is element-wise over the iteration shape.
enum class AnchorKind : std::uint8_t { kNone };
inline constexpr unsigned kNumAnchorKinds = 1;
const char* anchor_kind_name(AnchorKind kind);

struct Anchor {
  AnchorKind kind = AnchorKind::kNone;

  friend bool operator==(const Anchor&, const Anchor&) = default;
};

struct FusedProgram {
  std::vector<DType> inputs;           // tensors read, each broadcast to the iteration shape
  std::vector<ScalarArg> scalars;      // values passed at launch
  std::vector<Instruction> prologue;   // fused on read; with no anchor, all the code
  Anchor anchor;                       // none: no anchor
  std::vector<Instruction> epilogue;   // fused on write; empty with no anchor
  std::vector<ProgramOutput> outputs;  // tensors written, all of the iteration shape
  std::int32_t num_registers = 0;      // every register is written once, in block order

  // The blocks in the order they run (the prologue, then the epilogue).
  std::array<const std::vector<Instruction>*, 2> blocks() const { return {&prologue, &epilogue}; }

  // The type each register holds.
  std::vector<ValueType> register_types() const;
  std::uint64_t hash() const;
  // Pseudo-code, one instruction per line, for logs and test failures.
  std::string to_string() const;

  friend bool operator==(const FusedProgram&, const FusedProgram&) = default;
};

// What launches need of a program, derived once when it is built (not at every launch).
struct ProgramFacts {
  std::uint64_t hash = 0;
  // Bit i: float scalar argument i (i < 64) divides a float value (see
  // SpecializationKey::exact_reciprocals).
  std::uint64_t divisor_scalars = 0;

  static ProgramFacts of(const FusedProgram& program);
};

// The scalar value of argument `arg` for op scalar `s`, as the 64 bits a kernel reads: a float's
// bits in the low half, or an int32 / int64 / 0-1 byte value.
std::int64_t scalar_bits(const ScalarArg& arg, const Scalar& s);

}  // namespace streamfuse::jit
