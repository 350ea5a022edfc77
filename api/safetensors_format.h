// The safetensors file format, bytes only (no tensors): reading and checking a file's header,
// and writing one. A file is an 8-byte little-endian header length N, N bytes of JSON (an object:
// optional "__metadata__", a string-to-string map, and for each tensor its "dtype", "shape" and
// "data_offsets" [begin, end) relative to the data after the header), then the data.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "streamfuse/dtype.h"
#include "streamfuse/shape.h"

namespace streamfuse::api {

struct SafetensorsEntry {
  std::string name;
  DType dtype = kF32;
  Shape shape;
  std::uint64_t begin = 0;  // byte range in the file's data section
  std::uint64_t end = 0;
};

struct SafetensorsHeader {
  std::vector<SafetensorsEntry> tensors;  // in the order of their data
  std::map<std::string, std::string> metadata;
  std::uint64_t data_start = 0;  // where the data section starts in the file
};

// Largest header read (the reference implementation's limit): a length beyond it is a corrupt
// or hostile file, not a header to allocate for.
inline constexpr std::uint64_t kMaxSafetensorsHeader = 100u << 20;

// The header of the file whose whole content is `file`. Throws Error saying what is wrong (the
// caller prefixes the path) for anything that is not a well-formed file: too short, a header
// length beyond the file or kMaxSafetensorsHeader, JSON that does not parse or is not an object,
// entries without a dtype, shape or offsets, dtypes streamfuse does not have, ranks beyond
// kMaxRank, byte ranges whose size is not the shape's, that overlap or leave holes or run past
// the end of the file.
SafetensorsHeader read_safetensors_header(std::string_view file);

// The header bytes (length, JSON, padding) for `tensors` laid out in order, each range given;
// the JSON is padded with spaces so the data starts 8-byte aligned.
std::string write_safetensors_header(const std::vector<SafetensorsEntry>& tensors,
                                     const std::map<std::string, std::string>& metadata);

// The format's name of a dtype ("F32", "BF16", ...).
std::string_view safetensors_dtype_name(DType dtype);

}  // namespace streamfuse::api
