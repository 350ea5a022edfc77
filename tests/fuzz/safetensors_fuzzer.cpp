// Fuzz target: a safetensors file (api/safetensors_format.h), as load_safetensors reads it. Bytes
// that do not make a well-formed file must throw Error; a header that reads must describe
// tensors lying exactly in the file's data, which write back to the same header and compute.
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "api/safetensors_format.h"
#include "streamfuse/streamfuse.h"
#include "tests/fuzz/fuzz_target.h"

namespace streamfuse::fuzz {

std::vector<std::string> seeds() {
  const auto file = [](const std::vector<api::SafetensorsEntry>& entries,
                       const std::map<std::string, std::string>& metadata) {
    std::string out = api::write_safetensors_header(entries, metadata);
    const std::uint64_t data = entries.empty() ? 0 : entries.back().end;
    for (std::uint64_t i = 0; i < data; ++i) out.push_back(static_cast<char>(i * 37 + 11));
    return out;
  };
  return {
      file({}, {}),
      file({{"w", kF32, Shape({2, 3}), 0, 24}, {"ids", kI64, Shape({2}), 24, 40}},
           {{"format", "pt"}}),
      file({{"h.0.ln_1.weight", kBF16, Shape({4}), 0, 8},
            {"scalar", kF16, Shape({}), 8, 10},
            {"mask", kBool, Shape({3, 1}), 10, 13},
            {"empty", kI32, Shape({0, 5}), 13, 13},
            {"q", kI8, Shape({2}), 13, 15},
            {"zero_point", kU8, Shape({1}), 15, 16}},
           {}),
  };
}

}  // namespace streamfuse::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace streamfuse;
  const std::string_view file(reinterpret_cast<const char*>(data), size);
  api::SafetensorsHeader header;
  try {
    header = api::read_safetensors_header(file);
  } catch (const Error&) {
    return 0;
  }
  std::uint64_t expected = 0;
  for (const api::SafetensorsEntry& e : header.tensors) {
    if (e.begin != expected || e.end < e.begin) fuzz::fail("tensors that do not tile the data");
    expected = e.end;
  }
  if (header.data_start + expected != size) fuzz::fail("tensors past the end of the file");
  const std::string again = api::write_safetensors_header(header.tensors, header.metadata) +
                            std::string(file.substr(header.data_start));
  const api::SafetensorsHeader reread = api::read_safetensors_header(again);
  if (reread.metadata != header.metadata || reread.tensors.size() != header.tensors.size())
    fuzz::fail("a header does not write back to itself");
  for (std::size_t i = 0; i < header.tensors.size(); ++i) {
    const api::SafetensorsEntry &a = header.tensors[i], &b = reread.tensors[i];
    if (a.name != b.name || a.dtype != b.dtype || a.shape != b.shape || a.begin != b.begin ||
        a.end != b.end)
      fuzz::fail("a header does not write back to itself");
    // The tensor as load_safetensors makes it (copied: the input is not aligned), then used.
    if (a.shape.numel() > (1 << 16)) continue;
    const Tensor t = from_blob(file.data() + header.data_start + a.begin, a.dtype, a.shape);
    (void)sum(t.to(kF32)).item<float>();
  }
  return 0;
}
