// The archive every cache payload is written with: cereal's portable binary archive (fixed
// endianness), plus the checked reads that keep a payload which passed its checksum but came from
// a bug or another build from producing out-of-range values. Internal to cache/.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>

#include <cereal/archives/portable_binary.hpp>

#include "streamfuse/error.h"

namespace streamfuse::cache {

// A payload that does not decode: the caller treats the file as a cache miss.
class FormatError : public Error {
 public:
  using Error::Error;
};

using InArchive = cereal::PortableBinaryInputArchive;
using OutArchive = cereal::PortableBinaryOutputArchive;

// Bounds on decoded sizes: far above anything streamfuse writes, low enough that a bad size
// cannot make a decoder allocate gigabytes.
inline constexpr std::uint32_t kMaxOps = 1 << 16;
inline constexpr std::uint32_t kMaxItems = 1 << 20;
inline constexpr std::uint64_t kMaxBytes = std::uint64_t{1} << 32;

[[noreturn]] inline void bad_payload(const std::string& what) {
  throw FormatError("cache payload does not decode: " + what);
}

// Enums travel as their underlying integer and are range-checked on the way in.
template <class E>
void put_enum(OutArchive& out, E e) {
  out(static_cast<std::uint32_t>(e));
}
template <class E>
E get_enum(InArchive& in, unsigned count, const char* what) {
  std::uint32_t v = 0;
  in(v);
  if (v >= count) bad_payload(std::string(what) + " " + std::to_string(v) + " out of range");
  return static_cast<E>(v);
}

inline std::uint32_t get_size(InArchive& in, std::uint32_t max, const char* what) {
  std::uint32_t n = 0;
  in(n);
  if (n > max) bad_payload(std::string(what) + " count " + std::to_string(n));
  return n;
}

// Bools travel as one byte, 0 or 1 (reading any other byte into a bool is undefined).
inline bool get_bool(InArchive& in, const char* what) {
  std::uint8_t b = 0;
  in(b);
  if (b > 1) bad_payload(std::string(what) + " flag " + std::to_string(b));
  return b != 0;
}

// Byte strings: a u64 length, then the bytes.
inline void put_bytes(OutArchive& out, std::string_view bytes) {
  out(static_cast<std::uint64_t>(bytes.size()));
  out(cereal::binary_data(bytes.data(), bytes.size()));
}
inline std::string get_bytes(InArchive& in, std::uint64_t max = kMaxBytes) {
  std::uint64_t n = 0;
  in(n);
  if (n > max) bad_payload("byte string of " + std::to_string(n) + " bytes");
  std::string s;
  // Read in pieces, so a length that lies about a short payload fails before allocating it all.
  constexpr std::uint64_t kPiece = 1 << 20;
  while (s.size() < n) {
    const std::size_t piece =
        static_cast<std::size_t>(std::min<std::uint64_t>(kPiece, n - s.size()));
    const std::size_t at = s.size();
    s.resize(at + piece);
    in(cereal::binary_data(s.data() + at, piece));
  }
  return s;
}

// The bytes `write(archive)` produces.
template <class F>
std::string encode_with(F&& write) {
  std::ostringstream os(std::ios::binary);
  {
    OutArchive out(os);
    write(out);
  }
  return std::move(os).str();
}

// Runs `read(archive, more)` over all of `bytes`, where more() says whether bytes are left: for
// payloads that end in parts a later writer added (read compatibly: older writers' payloads
// stop before them). cereal's own errors (reading past the end) and bytes left over are format
// errors.
template <class F>
auto decode_with_more(std::string_view bytes, F&& read) {
  // The archive's first byte says whether the writer was little-endian (1) or big-endian (0);
  // cereal would take any other byte for "swap every value", which no writer means.
  if (!bytes.empty() && static_cast<unsigned char>(bytes[0]) > 1) bad_payload("byte order flag");
  std::istringstream is(std::string(bytes), std::ios::binary);
  try {
    InArchive in(is);
    auto value = read(in, [&is] { return is.peek() != std::char_traits<char>::eof(); });
    if (is.peek() != std::char_traits<char>::eof()) bad_payload("bytes left over");
    return value;
  } catch (const cereal::Exception& e) {
    bad_payload(e.what());
  }
}

// decode_with_more for payloads without optional parts: `read(archive)`.
template <class F>
auto decode_with(std::string_view bytes, F&& read) {
  return decode_with_more(bytes, [&](InArchive& in, const auto&) { return read(in); });
}

}  // namespace streamfuse::cache
