// CRC-32 (IEEE 802.3, the checksum of zip and PNG) of cache file payloads, computed eight bytes
// at a time ("slicing-by-8"): about 1.3 cycles per byte, against ~4 for a byte-at-a-time table.
// Reading a warm cache checks every payload, kernel libraries included (tens of KiB each), on the
// first iteration's critical path, so this is part of cold-start latency.
#pragma once

#include <cstdint>
#include <string_view>

namespace streamfuse::cache {

// The CRC-32 of `bytes`; `crc32(b) == crc32_update(crc32_update(0, x), y)` for b = x + y.
std::uint32_t crc32_update(std::uint32_t crc, std::string_view bytes);
inline std::uint32_t crc32(std::string_view bytes) { return crc32_update(0, bytes); }

}  // namespace streamfuse::cache
