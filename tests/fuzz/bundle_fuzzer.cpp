// Fuzz target: a plan bundle's payload (plans, kernels, libraries and prepared ops per device).
#include "runtime/bundle.h"
#include "tests/fuzz/exercise.h"
#include "tests/fuzz/fuzz_target.h"
#include "tests/fuzz/samples.h"

namespace streamfuse::fuzz {

std::vector<std::string> seeds() { return {runtime::encode_bundle(sample_bundle())}; }

}  // namespace streamfuse::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace streamfuse;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::vector<runtime::BundleSection> sections;
  try {
    sections = runtime::decode_bundle(bytes);
  } catch (const cache::FormatError&) {
    return 0;
  }
  // Loading normalizes (plans' triggers deduplicated, each library once): once saved again, a
  // bundle saves the same bytes.
  const std::string saved = runtime::encode_bundle(sections);
  if (runtime::encode_bundle(runtime::decode_bundle(saved)) != saved)
    fuzz::fail("a saved bundle does not save again the same");
  fuzz::use_sections(sections);
  return 0;
}
