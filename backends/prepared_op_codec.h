// Prepared ops as bytes: a device's list (the payload of prepared/<device>.ops, and a section of
// bundles). Decoding checks the structure (a matmul with two inputs, one output, strides per
// input); the backend checks the shapes again before it prepares one.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.h"
#include "cache/archive.h"

namespace streamfuse::backends {

// The most prepared ops a device's file keeps (the most recently first used ones).
inline constexpr std::size_t kMaxPreparedOps = 64;

void put_prepared_ops(cache::OutArchive& out, const std::vector<backends::PreparedOp>& ops);
// Throws FormatError.
std::vector<backends::PreparedOp> get_prepared_ops(cache::InArchive& in);

std::string encode_prepared_ops(const std::vector<backends::PreparedOp>& ops);
// Throws FormatError.
std::vector<backends::PreparedOp> decode_prepared_ops(std::string_view bytes);

}  // namespace streamfuse::backends
