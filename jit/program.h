// FusedProgram: one fused kernel, as element-wise blocks of straight-line code over virtual
// registers around an optional anchor. Built by the fusion builders from the ops of a segment;
// run by the interpreter or compiled to a kernel. It holds no sizes and no scalar values, so one
// program serves every batch size and every constant.
//
// With no anchor, the prologue is the whole computation over one iteration shape and the
// epilogue is empty.
//
// A reduction anchor (kReduce) reduces the iteration shape along one axis (or all of it) in
// rows: a row is the elements that one position of the reduced shape covers. The prologue is
// per-element code (registers hold one element of a row); the epilogue is per-row code
// (registers hold one value per row: stage results, loads of inputs that do not vary along the
// axis, ops on those). The anchor's stages reduce prologue registers, each over the whole row, in
// order; stage k's result is read by kReduced instructions of the epilogue, and the prologue may
// read any epilogue register (a row value broadcast along the axis). So a row runs: the
// epilogue's code that needs no stage, the prologue's code for stage 0 over every element
// (folded), the epilogue's code that needs stage 0, ..., then the prologue's code for the
// outputs over every element. A per-element output has the iteration shape, a per-row output the
// reduced shape (the axis of size 1).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/ir.h"
#include "streamfuse/dtype.h"

namespace streamfuse::jit {

// What a register holds: the compute type of a dtype (f16/bf16 compute in float, i8/u8 in i32;
// their values are rounded to the 16-bit grid, or wrapped to 8 bits, by kRound, so registers hold
// exactly what unfused kernels store; f64 computes in double). Persisted: append new types.
enum class ValueType : std::uint8_t { kFloat, kI32, kI64, kBool, kF64 };
inline constexpr unsigned kNumValueTypes = 5;
ValueType value_type_of(DType d);
// Whether a value of dtype `d` computed in value_type_of(d) must be rounded (kRound) to hold what
// an unfused op stores: f16, bf16, i8 and u8.
constexpr bool rounds_in_registers(DType d) {
  return d == kF16 || d == kBF16 || d == kI8 || d == kU8;
}
// The dtype whose storage is the value type itself (f32, i32, i64, bool, f64).
DType storage_dtype_of(ValueType t);
const char* value_type_name(ValueType t);

enum class InstrKind : std::uint8_t {
  kLoad,     // out = input[index], converted from its dtype to `type`
  kScalar,   // out = scalar argument [index] (already of `type`)
  kOp,       // out = op(args...) computed in `type`; compare and logical ops give kBool
  kConvert,  // out = args[0] converted from its register's type to `type` (saturating, wrapping)
  kRound,    // out = args[0] rounded to `round`: a float to f16 or bf16, an i32 to i8 or u8
  kReduced,  // out = the result of the anchor's stage [index] for this row (kReduce epilogue)
  // out = input[index] at this element's position moved by args[0] * args[1] elements, converted
  // like kLoad: an indexed read (index_select, gather, embedding). args[0] is the index (an i32
  // or i64 register), args[1] the input's element stride along the indexed axis (an i64
  // register); the input is launched as a view whose stride along that axis is 0, and the
  // launch checks every index against the axis before the kernel runs (no-anchor programs only).
  kLoadAt,
};
inline constexpr unsigned kNumInstrKinds = 7;

struct Instruction {
  InstrKind kind = InstrKind::kOp;
  core::OpKind op = core::OpKind::kAdd;  // kOp only
  ValueType type = ValueType::kFloat;    // kOp: the operands' type; others: the result's
  DType round = kF16;                    // kRound only
  std::int32_t out = 0;                  // register written
  std::int32_t index = 0;                // kLoad: input; kScalar: scalar argument; kReduced: stage
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
  // kReduce only: one value per row (of an epilogue register), stored in the reduced shape;
  // otherwise one per element of the iteration shape.
  bool per_row = false;

  friend bool operator==(const ProgramOutput&, const ProgramOutput&) = default;
};

// What a kernel is built around. kNone: every output is element-wise over the iteration shape.
// kReduce: rows of the iteration shape reduced in stages (see the top of this file).
enum class AnchorKind : std::uint8_t { kNone, kReduce };
inline constexpr unsigned kNumAnchorKinds = 2;
const char* anchor_kind_name(AnchorKind kind);

// One reduction of a kReduce anchor: `op` (sum, mean, max, min or argmax) of prologue register
// `input` over the row, as the unfused reduction of a tensor of dtype `dtype` holding those
// values computes it (the dtype chooses the accumulator; the result has
// core::reduced_dtype(op, dtype)).
struct ReduceStage {
  core::OpKind op = core::OpKind::kSum;
  DType dtype = kF32;
  std::int32_t input = 0;

  friend bool operator==(const ReduceStage&, const ReduceStage&) = default;
};

// Stages of one anchor at most (softmax has two, layer_norm two; bounded so a program stays one
// kernel a row's passes can keep in cache).
inline constexpr std::size_t kMaxReduceStages = 8;

struct Anchor {
  AnchorKind kind = AnchorKind::kNone;
  // kReduce: the iteration shape's axis that rows run along, or core::kAllAxes (one row of
  // every element, in row-major order).
  std::int8_t axis = 0;
  std::vector<ReduceStage> stages;  // kReduce: in the order they run

  friend bool operator==(const Anchor&, const Anchor&) = default;
};

struct FusedProgram {
  std::vector<DType> inputs;           // tensors read, each broadcast to the iteration shape
  std::vector<ScalarArg> scalars;      // values passed at launch
  std::vector<Instruction> prologue;   // fused on read; with no anchor, all the code
  Anchor anchor;                       // none: no anchor
  std::vector<Instruction> epilogue;   // fused on write (kReduce: per row); empty with no anchor
  std::vector<ProgramOutput> outputs;  // tensors written (of the iteration shape, or per row)
  std::int32_t num_registers = 0;      // every register is written once

  // The blocks in an order where every register is written before it is read: the prologue
  // then the epilogue, or with a reduction anchor the per-row epilogue first (it reads no
  // per-element register; its kReduced instructions read stage results, not registers).
  std::array<const std::vector<Instruction>*, 2> blocks() const {
    if (anchor.kind == AnchorKind::kReduce) return {&epilogue, &prologue};
    return {&prologue, &epilogue};
  }
  std::array<std::vector<Instruction>*, 2> blocks() {
    if (anchor.kind == AnchorKind::kReduce) return {&epilogue, &prologue};
    return {&prologue, &epilogue};
  }

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
