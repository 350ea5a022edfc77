// Fuzz target: a whole cache file (header, fingerprint, checksum, payload), read as
// read_cache_file and inspect_cache_file read it, its payload then decoded by its kind's decoder
// as the cache directory and the streamfuse-cache tool do (every kind: plan, kernel, library,
// bundle, prepared ops, handed-on kernels).
#include <fstream>
#include <iterator>

#include "backends/block_files.h"
#include "backends/caching_allocator.h"
#include "backends/prepared_op_codec.h"
#include "cache/cache_file.h"
#include "cache/crc32.h"
#include "cache/op_codec.h"
#include "fusion/plan_codec.h"
#include "jit/kernel_codec.h"
#include "runtime/bundle.h"
#include "tests/fuzz/exercise.h"
#include "tests/fuzz/fuzz_target.h"
#include "tests/fuzz/samples.h"
#include "tests/temp_dir.h"

namespace streamfuse::fuzz {

// Files as write_cache_file writes them, one of each kind.
std::vector<std::string> seeds() {
  std::vector<std::pair<cache::FileKind, std::string>> payloads = {
      {cache::FileKind::kPlan, fusion::encode_plan(*sample_plans().front())},
      {cache::FileKind::kBundle, runtime::encode_bundle(sample_bundle())},
      {cache::FileKind::kPreparedOps, backends::encode_prepared_ops(sample_prepared_ops())},
      {cache::FileKind::kPlanEntries, cache::encode_ops(sample_plans().front()->ops)},
      {cache::FileKind::kHeldBlocks, backends::encode_held_blocks({{64, 3}, {1 << 21, 2}})},
  };
  const jit::KernelRecord& k = sample_kernels().front();
  payloads.emplace_back(
      cache::FileKind::kCpuKernel,
      jit::encode_kernel_entry({k.program_hash, k.program, k.key, k.symbol, k.library->name}));
  payloads.emplace_back(cache::FileKind::kCpuLibrary, jit::encode_library(*k.library));
  const jit::KernelRequest request{k.program_hash, k.program, k.key};
  payloads.emplace_back(cache::FileKind::kHandedOn, jit::encode_kernel_requests({&request, 1}));
  const testing::TempDir dir;
  std::vector<std::string> out;
  for (const auto& [kind, payload] : payloads) {
    const std::string path = dir.path() + "/file";
    cache::write_cache_file(path, kind, cache::portable_fingerprint(), payload);
    std::ifstream in(path, std::ios::binary);
    out.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return out;
}

namespace {

// What reading the file's payload leads to, by its kind.
void use_payload(cache::FileKind kind, const std::string& payload) {
  try {
    switch (kind) {
      case cache::FileKind::kPlan:
        use_plan(*fusion::make_plan(fusion::decode_plan(payload)));
        break;
      case cache::FileKind::kCpuKernel: {
        const jit::KernelEntry e = jit::decode_kernel_entry(payload);
        use_kernel(e.program, e.key);
        break;
      }
      case cache::FileKind::kBundle:
        use_sections(runtime::decode_bundle(payload));
        break;
      case cache::FileKind::kCpuLibrary:
        (void)jit::decode_library(payload);
        break;
      case cache::FileKind::kPreparedOps:
        for (const backends::PreparedOp& op : backends::decode_prepared_ops(payload))
          use_prepared_op(op);
        break;
      case cache::FileKind::kHandedOn:
        for (const jit::KernelRequest& r : jit::decode_kernel_requests(payload))
          use_kernel(r.program, r.key);
        break;
      case cache::FileKind::kPlanEntries:  // each is looked up as a segment's first op
        for (const core::OpDesc& op : cache::decode_ops(payload))
          (void)core::hash_op(op), (void)fusion::first_op_hash(op);
        break;
      case cache::FileKind::kHeldBlocks:  // each is made by an allocator: a size class
        for (const backends::HeldBlocks& b : backends::decode_held_blocks(payload))
          if (backends::CachingAllocator::size_class(static_cast<std::size_t>(b.capacity)) !=
              b.capacity)
            fail("a held block that is no size class was accepted");
        break;
    }  // no default: a new kind warns (-Wswitch) until it is fuzzed here too
  } catch (const cache::FormatError&) {
  }
}

}  // namespace
}  // namespace streamfuse::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace streamfuse;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const cache::ReadResult any = cache::parse_cache_file(bytes, std::nullopt, std::nullopt);
  const cache::ReadResult plan =
      cache::parse_cache_file(bytes, cache::FileKind::kPlan, cache::portable_fingerprint());
  (void)cache::rejection_name(any.rejection);
  if (plan && (!any || plan.payload != any.payload)) fuzz::fail("a stricter read accepted more");
  if (!any) return 0;
  (void)cache::file_kind_name(any.kind);
  // The header's sizes and checksum are the bytes': a 32-byte header, then nothing else.
  if (32 + any.fingerprint.size() + any.payload.size() != size ||
      bytes.substr(32, any.fingerprint.size()) != any.fingerprint ||
      bytes.substr(32 + any.fingerprint.size()) != any.payload)
    fuzz::fail("an accepted file's parts are not its bytes");
  fuzz::use_payload(any.kind, any.payload);
  return 0;
}
