// Binary encodings of what the persistent cache stores: ops (relative forms of plans), fused
// programs and specialization keys. cereal's portable binary archive (fixed endianness), every
// enum and size checked on decode, so a payload that passed its file's checksum but came from a
// bug or another build is an error, never an out-of-range value in a plan.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cache/archive.h"
#include "jit/program.h"
#include "jit/specialization.h"
#include "core/ir.h"

namespace streamfuse::cache {

// Parts of larger payloads (plans, kernels, bundles). get_* throw FormatError.
void put_op(OutArchive& out, const core::OpDesc& op);
core::OpDesc get_op(InArchive& in);
void put_program(OutArchive& out, const jit::FusedProgram& program);
jit::FusedProgram get_program(InArchive& in);  // checked: well formed
void put_key(OutArchive& out, const jit::SpecializationKey& key);
jit::SpecializationKey get_key(InArchive& in);

// Whole payloads.

std::string encode_ops(std::span<const core::OpDesc> ops);
std::vector<core::OpDesc> decode_ops(std::string_view bytes);

std::string encode_program(const jit::FusedProgram& program);
jit::FusedProgram decode_program(std::string_view bytes);

std::string encode_key(const jit::SpecializationKey& key);
jit::SpecializationKey decode_key(std::string_view bytes);

}  // namespace streamfuse::cache
