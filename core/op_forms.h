// Which compute types each element-wise op has a function for in the kernel prelude
// (core/op_math.h): the one table the eager kernel table (backends/cpu/kernels/elementwise.cpp)
// and the code generators (jit::has_form) both read, so an op runs eagerly exactly where it
// compiles.
#pragma once

#include "core/ir.h"

namespace streamfuse::core {

struct OpForms {
  bool floating = false;  // float (f32, f16, bf16 compute in float) and double (f64)
  bool integer = false;   // i32, i64
  bool boolean = false;   // bool
};

constexpr OpForms op_forms(OpKind kind) {
  switch (kind) {
    case OpKind::kExp:
    case OpKind::kLog:
    case OpKind::kSqrt:
    case OpKind::kRsqrt:
    case OpKind::kRecip:
    case OpKind::kSin:
    case OpKind::kCos:
    case OpKind::kTanh:
    case OpKind::kErf:
    case OpKind::kSigmoid:
    case OpKind::kDiv:
      return {.floating = true};
    case OpKind::kNeg:
    case OpKind::kAbs:
    case OpKind::kRelu:
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kMul:
    case OpKind::kPow:
      return {.floating = true, .integer = true};
    case OpKind::kMaximum:
    case OpKind::kMinimum:
    case OpKind::kEq:
    case OpKind::kNe:
    case OpKind::kLt:
    case OpKind::kLe:
    case OpKind::kGt:
    case OpKind::kGe:
    case OpKind::kWhere:  // the type of its values (the condition is bool)
    // Logical ops read their operands as bool whatever the type (program_check requires kBool).
    case OpKind::kLogicalAnd:
    case OpKind::kLogicalOr:
    case OpKind::kLogicalNot:
      return {.floating = true, .integer = true, .boolean = true};
    default:
      return {};
  }
}

}  // namespace streamfuse::core
