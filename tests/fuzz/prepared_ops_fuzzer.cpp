// Fuzz target: a prepared-ops file's payload (the matmuls a device prepares while starting).
#include "backends/prepared_op_codec.h"
#include "tests/fuzz/exercise.h"
#include "tests/fuzz/fuzz_target.h"
#include "tests/fuzz/samples.h"

namespace streamfuse::fuzz {

std::vector<std::string> seeds() { return {backends::encode_prepared_ops(sample_prepared_ops())}; }

}  // namespace streamfuse::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace streamfuse;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::vector<backends::PreparedOp> ops;
  try {
    ops = backends::decode_prepared_ops(bytes);
  } catch (const cache::FormatError&) {
    return 0;
  }
  const std::string again = backends::encode_prepared_ops(ops);
  if (fuzz::native_byte_order(bytes) && again != bytes)
    fuzz::fail("prepared ops do not encode back");
  for (const backends::PreparedOp& op : ops) fuzz::use_prepared_op(op);
  return 0;
}
