#include "api/safetensors_format.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "streamfuse/error.h"

namespace streamfuse::api {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; a big-endian host would need byte swaps");

using Json = nlohmann::json;

constexpr std::string_view kMetadataKey = "__metadata__";

struct DTypeName {
  std::string_view name;
  DType dtype;
};
constexpr DTypeName kDTypes[] = {{"F32", kF32}, {"F16", kF16}, {"BF16", kBF16},
                                 {"I32", kI32}, {"I64", kI64}, {"BOOL", kBool},
                                 {"I8", kI8},   {"U8", kU8},   {"F64", kF64}};
// The format's other dtypes: named in the error, so that a model file is not called corrupt.
constexpr std::string_view kOtherDTypes[] = {
    "I16", "U16", "U32", "U64", "F8_E4M3", "F8_E5M2", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2", "C64"};

[[noreturn]] void bad(const std::string& what) { throw Error(what); }

// A name from the file, in an error message: quoted, and cut short (a hostile file may make it
// megabytes long).
std::string in_quotes(std::string_view name) {
  return "'" + std::string(name.substr(0, 64)) + (name.size() > 64 ? "...'" : "'");
}

DType parse_dtype(const std::string& name, const Json& value) {
  if (!value.is_string()) bad("tensor " + in_quotes(name) + ": \"dtype\" is not a string");
  const std::string& s = value.get_ref<const std::string&>();
  for (const DTypeName& d : kDTypes)
    if (d.name == s) return d.dtype;
  for (std::string_view other : kOtherDTypes)
    if (other == s)
      bad("tensor " + in_quotes(name) + ": dtype " + s +
          " is not one streamfuse has (F32, F16, BF16, I32, I64, BOOL, I8, U8, F64)");
  bad("tensor " + in_quotes(name) + ": unknown dtype " + in_quotes(s));
}

Shape parse_shape(const std::string& name, const Json& value) {
  if (!value.is_array()) bad("tensor " + in_quotes(name) + ": \"shape\" is not an array");
  if (value.size() > static_cast<std::size_t>(kMaxRank))
    bad("tensor " + in_quotes(name) + ": rank " + std::to_string(value.size()) +
        " is beyond streamfuse's " + std::to_string(kMaxRank));
  Shape shape;
  for (const Json& d : value) {
    if (!d.is_number_unsigned() ||
        d.get<std::uint64_t>() >
            static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      bad("tensor " + in_quotes(name) + ": a dimension of \"shape\" is not a size");
    shape.push_back(static_cast<std::int64_t>(d.get<std::uint64_t>()));
  }
  return shape;
}

// The bytes `shape` of `dtype` takes, or none when that overflows.
bool byte_size(const Shape& shape, DType dtype, std::uint64_t* bytes) {
  std::uint64_t n = element_size(dtype);
  for (int d = 0; d < shape.rank(); ++d) {
    const auto size = static_cast<std::uint64_t>(shape[d]);
    if (size != 0 && n > std::numeric_limits<std::uint64_t>::max() / size) return false;
    n *= size;
  }
  *bytes = n;
  return true;
}

SafetensorsEntry parse_entry(const std::string& name, const Json& value) {
  if (!value.is_object()) bad("tensor " + in_quotes(name) + ": its entry is not an object");
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!value.contains(key)) bad("tensor " + in_quotes(name) + ": no \"" + key + "\"");
  SafetensorsEntry e;
  e.name = name;
  e.dtype = parse_dtype(name, value["dtype"]);
  e.shape = parse_shape(name, value["shape"]);
  const Json& offsets = value["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned())
    bad("tensor " + in_quotes(name) + ": \"data_offsets\" is not a pair of offsets");
  e.begin = offsets[0].get<std::uint64_t>();
  e.end = offsets[1].get<std::uint64_t>();
  std::uint64_t bytes = 0;
  if (e.end < e.begin || !byte_size(e.shape, e.dtype, &bytes) || e.end - e.begin != bytes)
    bad("tensor " + in_quotes(name) + ": bytes [" + std::to_string(e.begin) + ", " +
        std::to_string(e.end) + ") do not hold shape " + e.shape.to_string() + " of " +
        std::string(safetensors_dtype_name(e.dtype)));
  return e;
}

}  // namespace

std::string_view safetensors_dtype_name(DType dtype) {
  for (const DTypeName& d : kDTypes)
    if (d.dtype == dtype) return d.name;
  return "?";
}

SafetensorsHeader read_safetensors_header(std::string_view file) {
  if (file.size() < 8) bad("not a safetensors file: " + std::to_string(file.size()) + " bytes");
  std::uint64_t length = 0;
  std::memcpy(&length, file.data(), 8);
  if (length > kMaxSafetensorsHeader || length > file.size() - 8)
    bad("not a safetensors file, or truncated: a header of " + std::to_string(length) +
        " bytes in a file of " + std::to_string(file.size()));
  const std::string_view text = file.substr(8, length);

  // Top-level keys are checked for duplicates while parsing (the JSON library keeps the last).
  std::set<std::string> seen;
  std::optional<std::string> duplicate;  // the first name seen twice
  const Json::parser_callback_t no_duplicates = [&](int depth, Json::parse_event_t event,
                                                    Json& parsed) {
    if (depth == 1 && event == Json::parse_event_t::key && parsed.is_string() && !duplicate &&
        !seen.insert(parsed.get<std::string>()).second)
      duplicate = parsed.get<std::string>();
    return true;
  };
  const Json header = Json::parse(text.begin(), text.end(), no_duplicates,
                                  /*allow_exceptions=*/false);
  if (header.is_discarded()) bad("the header is not JSON");
  if (!header.is_object()) bad("the header is not a JSON object");
  if (duplicate) bad("the header names " + in_quotes(*duplicate) + " twice");

  SafetensorsHeader out;
  out.data_start = 8 + length;
  for (const auto& [key, value] : header.items()) {
    if (key == kMetadataKey) {
      if (!value.is_object()) bad("\"__metadata__\" is not an object");
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string()) bad("metadata " + in_quotes(mk) + " is not a string");
        out.metadata.emplace(mk, mv.get<std::string>());
      }
      continue;
    }
    out.tensors.push_back(parse_entry(key, value));
  }

  // The data section is exactly the tensors' bytes, back to back: no overlaps (two tensors
  // sharing bytes), no holes (bytes no tensor accounts for).
  std::stable_sort(out.tensors.begin(), out.tensors.end(),
                   [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
                     return a.begin < b.begin || (a.begin == b.begin && a.end < b.end);
                   });
  const std::uint64_t data_size = file.size() - out.data_start;
  std::uint64_t expected = 0;
  for (const SafetensorsEntry& e : out.tensors) {
    if (e.begin != expected)
      bad("tensor " + in_quotes(e.name) + " starts at byte " + std::to_string(e.begin) +
          " of the data, not " + std::to_string(expected) +
          (e.begin < expected ? " (it overlaps another)" : " (bytes before it belong to none)"));
    expected = e.end;
  }
  if (expected != data_size)
    bad(expected > data_size
            ? "truncated: the tensors need " + std::to_string(expected) +
                  " bytes of data, the file has " + std::to_string(data_size)
            : "the tensors account for " + std::to_string(expected) + " of the file's " +
                  std::to_string(data_size) + " bytes of data");
  return out;
}

std::string write_safetensors_header(const std::vector<SafetensorsEntry>& tensors,
                                     const std::map<std::string, std::string>& metadata) {
  Json header = Json::object();
  if (!metadata.empty()) header[std::string(kMetadataKey)] = metadata;
  for (const SafetensorsEntry& e : tensors) {
    Json shape = Json::array();
    for (int d = 0; d < e.shape.rank(); ++d) shape.push_back(e.shape[d]);
    header[e.name] = {{"dtype", std::string(safetensors_dtype_name(e.dtype))},
                      {"shape", std::move(shape)},
                      {"data_offsets", {e.begin, e.end}}};
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  const std::uint64_t length = text.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &length, 8);
  return out + text;
}

}  // namespace streamfuse::api
