// Binary encodings of ops (the relative forms of plans, prepared ops): cereal's portable binary
// archive (fixed endianness), every enum and size checked on decode, so a payload that passed its
// file's checksum but came from a bug or another build is an error, never an out-of-range value in
// a plan.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cache/archive.h"
#include "core/ir.h"

namespace streamfuse::cache {

// Parts of larger payloads (plans, bundles). get_op throws FormatError.
void put_op(OutArchive& out, const core::OpDesc& op);
core::OpDesc get_op(InArchive& in);

// Whole payloads.
std::string encode_ops(std::span<const core::OpDesc> ops);
std::vector<core::OpDesc> decode_ops(std::string_view bytes);

}  // namespace streamfuse::cache
