// The FusedProgram of one op run on its own: how a device without eager kernels of its own
// (CUDA) runs element-wise ops, full() and copies through the JIT. The op's instructions come from
// emit_elementwise_op (jit/op_instructions.h), as the element-wise builder's do, so unfused and
// fused results agree bit for bit.
#pragma once

#include "core/ir.h"
#include "jit/program.h"

namespace streamfuse::jit {

// For an element-wise op (unary, binary, compare, logical, where, cast: inputs in op order) or
// full() (no inputs, one scalar argument: the value). Throws Error for other kinds.
FusedProgram single_op_program(const core::OpDesc& op);

// Reads one input of dtype `from` and stores it converted to `to` (a bitwise copy when equal).
FusedProgram copy_program(DType from, DType to);

}  // namespace streamfuse::jit
