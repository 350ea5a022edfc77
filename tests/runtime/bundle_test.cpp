// Bundle payloads: libraries are listed once by name, and a payload that gives one name two
// different images does not decode (the kernel cache loads a name once, so one image's kernels
// would run from the other's code); read without native code, a bundle keeps no library bytes.
// Held blocks travel per section, and bundles written before they did still read.
#include <gtest/gtest.h>

#include "cache/archive.h"
#include "runtime/bundle.h"
#include "tests/jit/chain_program.h"
#include "tests/temp_dir.h"

namespace streamfuse::cache {
namespace {

std::vector<runtime::BundleSection> two_kernels(const jit::LibraryImage& first,
                                                const jit::LibraryImage& second) {
  runtime::BundleSection s{"cpu", {}, {}, {}, {}};
  for (int n : {1, 2}) {
    const jit::FusedProgram p = jit::chain(n);
    s.kernels.push_back({p.hash(), p, jit::flat_key(), "sf_kernel_" + std::to_string(n),
                         std::make_shared<jit::LibraryImage>(n == 1 ? first : second)});
  }
  return {s};
}

TEST(Bundle, LibrariesAreWrittenOncePerName) {
  const jit::LibraryImage image{"0123456789abcdef", "machine", "source", "bytes"};
  const std::vector<runtime::BundleSection> sections =
      two_kernels(image, image);  // two loads, one library
  const std::vector<runtime::BundleSection> back =
      runtime::decode_bundle(runtime::encode_bundle(sections));
  ASSERT_EQ(back.size(), 1u);
  ASSERT_EQ(back[0].kernels.size(), 2u);
  EXPECT_EQ(back[0].kernels[0].library, back[0].kernels[1].library);
  EXPECT_EQ(back[0].kernels[1].library->bytes, "bytes");
}

TEST(Bundle, TwoImagesOfOneNameAreAFormatError) {
  const jit::LibraryImage image{"0123456789abcdef", "machine", "source", "bytes"};
  jit::LibraryImage other = image;
  other.bytes = "other bytes";
  // As an older writer listed them: one entry per image, even of one name.
  std::vector<runtime::BundleSection> sections = two_kernels(image, other);
  std::string payload = runtime::encode_bundle(sections);
  EXPECT_EQ(runtime::decode_bundle(payload)[0].kernels.size(), 2u)
      << "written once: the first image";
  other.name = "fedcba9876543210";
  sections = two_kernels(image, other);
  payload = runtime::encode_bundle(sections);
  // Renamed in the payload, as a corrupted one could be: same length, the second entry's name.
  const std::size_t at = payload.rfind(other.name);
  ASSERT_NE(at, std::string::npos);
  const std::size_t library_entry = payload.find(other.name);
  ASSERT_NE(library_entry, at) << "the name is in the library entry and in its kernel's record";
  payload.replace(library_entry, 16, image.name);
  payload.replace(at, 16, image.name);
  EXPECT_THROW(runtime::decode_bundle(payload), FormatError);
}

// Read without native code, no byte of a library is left to load, compile or write: only its
// name; the kernels keep what compiling them here needs.
TEST(Bundle, ReadWithoutNativeCodeKeepsProgramsAndDropsLibraries) {
  const testing::TempDir dir;
  const std::string path = dir.path() + "/model.sfplans";
  const jit::LibraryImage image{"0123456789abcdef", "machine", "source", "bytes"};
  const std::vector<runtime::BundleSection> sections = two_kernels(image, image);
  runtime::write_bundle(path, sections);
  const std::vector<runtime::BundleSection> kept = runtime::read_bundle(path);
  EXPECT_EQ(kept[0].kernels[0].library->bytes, "bytes");
  const std::vector<runtime::BundleSection> dropped =
      runtime::read_bundle(path, runtime::NativeCode::kDrop);
  ASSERT_EQ(dropped.size(), 1u);
  ASSERT_EQ(dropped[0].kernels.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    const jit::KernelRecord& k = dropped[0].kernels[i];
    EXPECT_EQ(k.program, sections[0].kernels[i].program);
    EXPECT_EQ(k.key, sections[0].kernels[i].key);
    EXPECT_EQ(k.symbol, sections[0].kernels[i].symbol);
    EXPECT_EQ(k.library->name, image.name);
    EXPECT_TRUE(k.library->bytes.empty());
    EXPECT_TRUE(k.library->source.empty());
    EXPECT_TRUE(k.library->fingerprint.empty()) << "no machine's kernels: none is loaded";
  }
}

std::vector<runtime::BundleSection> with_held_blocks() {
  const jit::LibraryImage image{"0123456789abcdef", "machine", "source", "bytes"};
  std::vector<runtime::BundleSection> sections = two_kernels(image, image);
  sections[0].held = {{1 << 20, 3}, {4096, 1}, {64, 12}};  // in the order first held
  sections.push_back(runtime::BundleSection{"cuda:0", {}, {}, {}, {}});
  return sections;
}

TEST(Bundle, HeldBlocksTravelWithTheirSection) {
  const std::vector<runtime::BundleSection> sections = with_held_blocks();
  const std::vector<runtime::BundleSection> back =
      runtime::decode_bundle(runtime::encode_bundle(sections));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].held, sections[0].held);
  EXPECT_TRUE(back[1].held.empty());
  EXPECT_EQ(back[0].kernels.size(), 2u);
}

TEST(Bundle, ABundleWrittenBeforeHeldBlocksReadsWithNone) {
  std::vector<runtime::BundleSection> sections = with_held_blocks();
  sections[0].held.clear();
  // An older writer's payload is this one without its records: an empty record per section.
  std::string payload = runtime::encode_bundle(sections);
  const std::size_t records = sections.size() * sizeof(std::uint32_t);
  ASSERT_EQ(payload.substr(payload.size() - records), std::string(records, '\0'));
  payload.resize(payload.size() - records);
  const std::vector<runtime::BundleSection> back = runtime::decode_bundle(payload);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].kernels.size(), 2u);
  EXPECT_TRUE(back[0].held.empty());
  EXPECT_TRUE(back[1].held.empty());
  // Written again, it carries its (empty) records.
  EXPECT_EQ(runtime::encode_bundle(back).size(), payload.size() + records);
}

TEST(Bundle, HeldBlocksNoAllocatorHoldsOrACutRecordAreFormatErrors) {
  std::vector<runtime::BundleSection> sections = with_held_blocks();
  const std::string good = runtime::encode_bundle(sections);
  EXPECT_THROW(runtime::decode_bundle(good.substr(0, good.size() - 2)), FormatError);
  EXPECT_THROW(runtime::decode_bundle(good + '\1'), FormatError);
  sections[0].held[1].capacity = 100;  // not a size class
  EXPECT_THROW(runtime::decode_bundle(runtime::encode_bundle(sections)), FormatError);
  sections[0].held[1] = {4096, 0};  // a class held by no block
  EXPECT_THROW(runtime::decode_bundle(runtime::encode_bundle(sections)), FormatError);
}

}  // namespace
}  // namespace streamfuse::cache
