// Fuzz target: a kernel file's payload (a compiled kernel's program, key, symbol and library).
#include "jit/kernel_codec.h"
#include "tests/fuzz/exercise.h"
#include "tests/fuzz/fuzz_target.h"
#include "tests/fuzz/samples.h"

namespace streamfuse::fuzz {

std::vector<std::string> seeds() {
  std::vector<std::string> out;
  for (const jit::KernelRecord& k : sample_kernels())
    out.push_back(
        jit::encode_kernel_entry({k.program_hash, k.program, k.key, k.symbol, k.library->name}));
  return out;
}

}  // namespace streamfuse::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace streamfuse;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  jit::KernelEntry entry;
  try {
    entry = jit::decode_kernel_entry(bytes);
  } catch (const cache::FormatError&) {
    return 0;
  }
  const std::string again = jit::encode_kernel_entry(entry);
  if (fuzz::native_byte_order(bytes) && again != bytes)
    fuzz::fail("a kernel record does not encode back");
  if (!jit::valid_library_name(entry.library)) fuzz::fail("a kernel record's library name");
  if (entry.program_hash != entry.program.hash()) fuzz::fail("a kernel record of another hash");
  (void)jit::kernel_hash(entry.program_hash, entry.key, "fuzz");
  fuzz::use_program(entry.program);
  fuzz::use_key(entry.key);
  fuzz::use_kernel(entry.program, entry.key);
  return 0;
}
