// Whether text is well-formed UTF-8 (Unicode Table 3-7), written apart from the code under test:
// for tests of what the library and the tools print.
#pragma once

#include <cstddef>
#include <string_view>

namespace streamfuse::testing {

inline bool valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    char32_t c = 0;
    if (b < 0x80) {
      n = 1, c = b;
    } else if ((b & 0xe0) == 0xc0) {
      n = 2, c = b & 0x1f;
    } else if ((b & 0xf0) == 0xe0) {
      n = 3, c = b & 0x0f;
    } else if ((b & 0xf8) == 0xf0) {
      n = 4, c = b & 0x07;
    } else {
      return false;
    }
    if (i + n > s.size()) return false;
    for (std::size_t k = 1; k < n; ++k) {
      const auto t = static_cast<unsigned char>(s[i + k]);
      if ((t & 0xc0) != 0x80) return false;
      c = (c << 6) | (t & 0x3f);
    }
    constexpr char32_t kLeast[] = {0, 0, 0x80, 0x800, 0x10000};  // shorter forms are overlong
    if (c < kLeast[n] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return false;
    i += n;
  }
  return true;
}

}  // namespace streamfuse::testing
