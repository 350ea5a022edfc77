// Binary encodings of fused programs and specialization keys (kernel records, plans, bundles),
// through cache/archive.h: every enum, size and index checked on decode, so a decoded program is
// as well formed as a built one.
#pragma once

#include <string>
#include <string_view>

#include "cache/archive.h"
#include "jit/program.h"
#include "jit/specialization.h"

namespace streamfuse::jit {

// Parts of larger payloads. get_* throw FormatError.
void put_program(cache::OutArchive& out, const FusedProgram& program);
FusedProgram get_program(cache::InArchive& in);  // checked: well formed
void put_key(cache::OutArchive& out, const SpecializationKey& key);
SpecializationKey get_key(cache::InArchive& in);

// Whole payloads.
std::string encode_program(const FusedProgram& program);
FusedProgram decode_program(std::string_view bytes);

std::string encode_key(const SpecializationKey& key);
SpecializationKey decode_key(std::string_view bytes);

}  // namespace streamfuse::jit
