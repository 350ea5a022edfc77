// Fuzz target: a list of ops (the payload piece of plans, triggers and prepared ops).
#include "cache/op_codec.h"
#include "tests/fuzz/exercise.h"
#include "tests/fuzz/fuzz_target.h"
#include "tests/fuzz/samples.h"

namespace streamfuse::fuzz {

std::vector<std::string> seeds() {
  std::vector<std::string> out;
  for (const auto& ops : sample_ops()) out.push_back(cache::encode_ops(ops));
  for (const auto& plan : sample_plans()) out.push_back(cache::encode_ops(plan->ops));
  return out;
}

}  // namespace streamfuse::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace streamfuse;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::vector<core::OpDesc> ops;
  try {
    ops = cache::decode_ops(bytes);
  } catch (const cache::FormatError&) {
    return 0;
  }
  std::uint64_t h = 0;
  for (const core::OpDesc& op : ops) h ^= core::hash_op(op) + core::to_string(op).size();
  const std::string again = cache::encode_ops(ops);
  if (fuzz::native_byte_order(bytes) && again != bytes) fuzz::fail("ops do not encode back");
  if (cache::decode_ops(again) != ops) fuzz::fail("re-encoded ops decode to other ops");
  return static_cast<int>(h & 0);
}
