// The slicing-by-8 CRC-32 agrees with a byte-at-a-time reference (Boost's crc_32_type, the
// implementation it replaced, so files written before it still verify) at every length and
// alignment, and across split updates.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include <boost/crc.hpp>

#include "cache/crc32.h"

namespace streamfuse::cache {
namespace {

std::uint32_t reference(std::string_view bytes) {
  boost::crc_32_type crc;
  crc.process_bytes(bytes.data(), bytes.size());
  return crc.checksum();
}

std::string random_bytes(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng() & 0xff);
  return s;
}

TEST(Crc32, KnownValue) {
  EXPECT_EQ(crc32(""), 0u);
  EXPECT_EQ(crc32("123456789"), 0xCBF43926u);  // the standard check value of CRC-32
}

TEST(Crc32, MatchesByteAtATimeAtEveryLengthAndAlignment) {
  const std::string data = random_bytes(300, 1);
  for (std::size_t offset = 0; offset < 8; ++offset)
    for (std::size_t n = 0; offset + n <= data.size(); ++n) {
      const std::string_view v(data.data() + offset, n);
      ASSERT_EQ(crc32(v), reference(v)) << "offset " << offset << " length " << n;
    }
}

TEST(Crc32, LargeInputs) {
  for (std::size_t n : {4096u, 65537u, 1u << 20}) {
    const std::string data = random_bytes(n, static_cast<std::uint32_t>(n));
    EXPECT_EQ(crc32(data), reference(data)) << n;
  }
}

TEST(Crc32, UpdatesCompose) {
  const std::string data = random_bytes(1000, 7);
  const std::string_view v(data);
  for (std::size_t split : {0u, 1u, 7u, 8u, 9u, 500u, 999u, 1000u})
    EXPECT_EQ(crc32_update(crc32(v.substr(0, split)), v.substr(split)), crc32(v)) << split;
}

}  // namespace
}  // namespace streamfuse::cache
