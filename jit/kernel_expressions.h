// The C expressions of a FusedProgram, shared by the C++ (CPU) and CUDA code generators: each
// instruction's expression, the conversions to and from storage, and the checks that a program
// fits its key. Both generators emit calls to the sf_* functions of the kernel prelude: each op
// is its sf_op_<Kind> function (core/op_math.h), which the eager kernels instantiate too, so a
// CPU kernel, a CUDA kernel and the eager kernels compute the same bits. Conversions call the
// prelude's conversions (core/scalar_ops.h) as backends/cpu/kernels/convert.h does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "jit/program.h"
#include "jit/specialization.h"

namespace streamfuse::jit {

// Throws CompileError "jit: cannot generate kernel <name>: <why>".
[[noreturn]] void fail_generation(std::string_view function_name, const std::string& why);

const char* c_type(ValueType t);            // float, int, long long, unsigned char
const char* storage_c_type(DType d);        // c_type of the value type; unsigned short for f16/bf16
std::string register_name(std::int32_t r);  // "r7"

// `expr` of value type `from` as value type `to` (convert.h's convert<To, From>).
std::string convert_value(const std::string& expr, ValueType from, ValueType to);
// An element of storage dtype `d` (expression `access`) as value type `to`.
std::string load_value(const std::string& access, DType d, ValueType to);
// Register value `expr` of type `from` as storage of dtype `d`.
std::string store_value(const std::string& expr, ValueType from, DType d);
// Scalar argument bits (a long long expression, see jit::scalar_bits) as a value of type `t`.
std::string scalar_value(const std::string& bits, ValueType t);

// The reduction template's accumulator (core/reduce_math.h) of reduction `op` over registers of
// type `t`, as backends/cpu/kernels/reduce_ops.h picks it for the eager kernel; empty for a
// non-reduction.
std::string reduce_op_type(core::OpKind op, ValueType t);
// The bits (as kernels pass scalars) of the result of accumulator `acc` of type `op_type` over
// `count` elements, as kReduced instructions read it.
std::string reduce_result_bits(core::OpKind op, const std::string& acc, const std::string& count,
                               const std::string& op_type);

// Whether op `k` can be computed in value type `t` (an instruction_line exists for it). The
// interpreter's loops (backends/cpu/kernels ChunkOps::op) exist for the same pairs.
bool has_form(core::OpKind k, ValueType t);

// Throws CompileError when the key does not fit the program (operand counts, dtypes, rank) or
// the program reads or writes a register, input or scalar it does not have.
void check_program(const FusedProgram& p, const SpecializationKey& key, std::string_view name);

// The expression that reads input j's element moved by `shift` elements (a kLoadAt's index times
// its stride, a long long expression).
using ShiftedElement = std::function<std::string(std::size_t j, const std::string& shift)>;

// `const T rN = expr;` for one instruction (not kScalar); `element(j)` is the expression that
// reads input j's element, `shifted` the one a kLoadAt reads (generators of kernels with an
// anchor have none: their programs hold no kLoadAt). Throws CompileError for an op without a
// form for its type.
std::string instruction_line(const FusedProgram& p, const Instruction& in,
                             const std::vector<ValueType>& types,
                             const std::function<std::string(std::size_t)>& element,
                             std::string_view name, const ShiftedElement& shifted = {});

// `const T rN = value;` for a kScalar instruction, reading the argument bits from the array
// `scalars` ("scalars", "a.scalars").
std::string scalar_line(const FusedProgram& p, const Instruction& in, std::string_view scalars);

// `program` with what `key` knows about its scalars applied: exact reciprocals multiply, equal
// scalars are read once (jit/program_optimizer.h).
FusedProgram specialize(const FusedProgram& program, const SpecializationKey& key,
                        std::string_view name);

}  // namespace streamfuse::jit
