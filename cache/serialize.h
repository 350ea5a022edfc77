// Binary encodings of what the persistent cache stores: ops (relative forms of plans), fused
// programs and specialization keys. cereal's portable binary archive (fixed endianness), every
// enum and size checked on decode, so a payload that passed its file's checksum but came from a
// bug or another build is an error, never an out-of-range value in a plan.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "jit/program.h"
#include "jit/specialization.h"
#include "stream/ir.h"
#include "streamfuse/error.h"

namespace streamfuse::cache {

// A payload that does not decode: the caller treats the file as a cache miss.
class FormatError : public Error {
 public:
  using Error::Error;
};

std::string encode_ops(std::span<const stream::OpDesc> ops);
std::vector<stream::OpDesc> decode_ops(std::string_view bytes);

std::string encode_program(const jit::FusedProgram& program);
jit::FusedProgram decode_program(std::string_view bytes);

std::string encode_key(const jit::SpecializationKey& key);
jit::SpecializationKey decode_key(std::string_view bytes);

}  // namespace streamfuse::cache
