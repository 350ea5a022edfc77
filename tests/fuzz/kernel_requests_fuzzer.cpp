// Fuzz target: the kernels a process handed on at exit for the next one to compile first
// (KernelStore::hand_on; programs and keys only, which the next process generates and compiles).
#include "jit/kernel_codec.h"
#include "tests/fuzz/exercise.h"
#include "tests/fuzz/fuzz_target.h"
#include "tests/fuzz/samples.h"

namespace streamfuse::fuzz {

std::vector<std::string> seeds() {
  std::vector<jit::KernelRequest> requests;
  for (const jit::KernelRecord& k : sample_kernels())
    requests.push_back({k.program_hash, k.program, k.key});
  // All of them in one file, one each, and none (as a process with nothing left writes).
  std::vector<std::string> out = {jit::encode_kernel_requests(requests),
                                  jit::encode_kernel_requests({})};
  for (const jit::KernelRequest& r : requests) out.push_back(jit::encode_kernel_requests({&r, 1}));
  return out;
}

}  // namespace streamfuse::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace streamfuse;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::vector<jit::KernelRequest> requests;
  try {
    requests = jit::decode_kernel_requests(bytes);
  } catch (const cache::FormatError&) {
    return 0;
  }
  const std::string again = jit::encode_kernel_requests(requests);
  if (fuzz::native_byte_order(bytes) && again != bytes) fuzz::fail("requests do not encode back");
  for (const jit::KernelRequest& r : requests) {
    if (r.program_hash != r.program.hash()) fuzz::fail("a request of another program's hash");
    // What the next process does with it: looks it up (hashes the key), generates its source.
    fuzz::use_program(r.program);
    fuzz::use_key(r.key);
    fuzz::use_kernel(r.program, r.key);
  }
  return 0;
}
