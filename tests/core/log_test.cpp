// What the library writes to stderr: log lines and warnings, always valid UTF-8, with bytes that
// are not printable text (from corrupt files, odd file names) shown as \xNN escapes.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "cache/cache_dir.h"
#include "cache/cache_file.h"
#include "core/log.h"
#include "fusion/plan_codec.h"
#include "tests/temp_dir.h"
#include "tests/valid_utf8.h"

namespace core = streamfuse::core;

namespace cache = streamfuse::cache;

namespace {

using streamfuse::testing::valid_utf8;

TEST(LogTest, PrintableKeepsTextAndEscapesEveryOtherByte) {
  // Text stays: ASCII, tabs and newlines (a compiler's diagnostics), UTF-8 of any plane.
  for (std::string_view text : {"plain ascii ~!@#$%^&*()\\", "a\tb\nc", "caf\xc3\xa9",
                                "\xe2\x86\x92 \xe4\xb8\xad", "\xf0\x9f\x98\x80", ""})
    EXPECT_EQ(core::printable(text), text);
  // Corrupt bytes, controls and malformed UTF-8 are escaped, byte by byte.
  EXPECT_EQ(core::printable("fp\xff\xfe!"), "fp\\xff\\xfe!");
  EXPECT_EQ(core::printable(std::string_view("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(core::printable("\x1b[31mred\r\x7f"), "\\x1b[31mred\\x0d\\x7f");
  EXPECT_EQ(core::printable("\xc2\x85"), "\\xc2\\x85") << "a C1 control (NEL)";
  EXPECT_EQ(core::printable("\xc0\xaf"), "\\xc0\\xaf") << "overlong '/'";
  EXPECT_EQ(core::printable("\xe0\x80\xaf"), "\\xe0\\x80\\xaf") << "overlong, 3 bytes";
  EXPECT_EQ(core::printable("\xed\xa0\x80"), "\\xed\\xa0\\x80") << "a surrogate";
  EXPECT_EQ(core::printable("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80") << "past U+10FFFF";
  EXPECT_EQ(core::printable("\xe2\x86"), "\\xe2\\x86") << "truncated";
  EXPECT_EQ(core::printable("\xe2\x86x\xc3\xa9"), "\\xe2\\x86x\xc3\xa9") << "text after resumes";
  EXPECT_EQ(core::printable("\x80\xbf"), "\\x80\\xbf") << "lone continuation bytes";
  // Always valid UTF-8, and escaping twice changes nothing.
  std::string every_byte;
  for (int b = 0; b < 256; ++b) every_byte += static_cast<char>(b);
  const std::string once = core::printable(every_byte + "\xf0\x9f\x98" + every_byte);
  EXPECT_TRUE(valid_utf8(once)) << once;
  EXPECT_EQ(core::printable(once), once);
}

TEST(LogTest, LogLinesAndWarningsAreEscaped) {
  core::set_log_mask(core::parse_log_channels("cache"));
  ::testing::internal::CaptureStderr();
  core::log_line(core::LogChannel::kCache, "rejected \xff\xfe\x1b[2J");
  core::warn_once("log-test-escape", std::string("bad\xc3 name\0", 10));
  const std::string err = ::testing::internal::GetCapturedStderr();
  core::set_log_mask(0);
  EXPECT_EQ(err,
            "[streamfuse:cache] rejected \\xff\\xfe\\x1b[2J\n"
            "[streamfuse] warning: bad\\xc3 name\\x00\n");
}

// The warning about a corrupt cache file quotes its header's fingerprint: the bytes 0xff 0xfe
// there reached stderr as they were, and stderr stopped being valid UTF-8.
TEST(LogTest, ACorruptCacheFileIsQuotedEscaped) {
  streamfuse::testing::TempDir dir;
  const std::filesystem::path plan = cache::plan_path(dir.path(), "cpu", 1, 2);
  std::filesystem::create_directories(plan.parent_path());
  cache::write_cache_file(plan, cache::FileKind::kPlan, "fp\xff\xfe\x1b", "payload");
  cache::CacheDir cache_dir(dir.path(), 1 << 30);
  core::set_log_mask(core::parse_log_channels("cache"));
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(cache_dir.read(plan, cache::FileKind::kPlan, cache::portable_fingerprint()));
  const std::string err = ::testing::internal::GetCapturedStderr();
  core::set_log_mask(0);
  EXPECT_TRUE(valid_utf8(err)) << err;
  EXPECT_NE(err.find("[streamfuse] warning: cache: ignored "), std::string::npos) << err;
  EXPECT_NE(err.find("(file: fp\\xff\\xfe\\x1b)"), std::string::npos) << err;
  EXPECT_NE(err.find("[streamfuse:cache] rejected "), std::string::npos) << err;
  EXPECT_EQ(err.find('\x1b'), std::string::npos) << err;
}

}  // namespace
