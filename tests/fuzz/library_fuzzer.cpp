// Fuzz target: a library file's payload (a kernel library's name, source and shared object).
#include "jit/kernel_codec.h"
#include "tests/fuzz/exercise.h"
#include "tests/fuzz/fuzz_target.h"
#include "tests/fuzz/samples.h"

namespace streamfuse::fuzz {

std::vector<std::string> seeds() {
  std::vector<std::string> out;
  const jit::LibraryImage* last = nullptr;
  for (const jit::KernelRecord& k : sample_kernels())
    if (k.library.get() != last) out.push_back(jit::encode_library(*(last = k.library.get())));
  return out;
}

}  // namespace streamfuse::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace streamfuse;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  jit::LibraryImage library;
  try {
    library = jit::decode_library(bytes);
  } catch (const cache::FormatError&) {
    return 0;
  }
  // The name becomes a file name (jit/kernel_files.h library_path).
  if (!jit::valid_library_name(library.name))
    fuzz::fail("a library name that is not 16 hex digits");
  const std::string again = jit::encode_library(library);
  if (fuzz::native_byte_order(bytes) && again != bytes)
    fuzz::fail("a library does not encode back");
  return 0;
}
