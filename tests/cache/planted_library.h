// A bundle whose compiled kernels were replaced on purpose: every library's bytes become a shared
// object of the test's own whose constructor creates the file named by $SF_PLANTED_MARKER, and
// the file's checksum is computed again, as whoever changed it would. Whether that file exists
// afterwards tells whether a process loaded any of the bundle's native code.
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cache/cache_file.h"
#include "fusion/plan_codec.h"
#include "jit/system_compiler.h"
#include "runtime/bundle.h"
#include "tests/temp_dir.h"

namespace streamfuse::testing {

inline constexpr const char* kPlantedMarkerVariable = "SF_PLANTED_MARKER";

// The planted shared object, built with the compiler kernels are built with; nullopt without one.
inline std::optional<std::string> planted_library() {
  const std::optional<jit::SystemCompiler> compiler = jit::SystemCompiler::probe();
  if (!compiler) return std::nullopt;
  TempDir dir;
  const std::string source = dir.write("planted.cpp", R"(
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
__attribute__((constructor)) static void planted() {
  if (const char* marker = getenv("SF_PLANTED_MARKER")) close(open(marker, O_WRONLY | O_CREAT, 0644));
}
)");
  const std::string library = dir.path() + "/planted.so";
  compiler->compile(source, library);
  std::ifstream in(library, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Replaces the bytes of every library in the bundle at `path` by `bytes` (names, fingerprints and
// sources unchanged) and writes it again, with a valid checksum. Returns how many libraries.
inline std::size_t plant_in_bundle(const std::filesystem::path& path, const std::string& bytes) {
  std::vector<runtime::BundleSection> sections = runtime::read_bundle(path);
  std::size_t planted = 0;
  for (runtime::BundleSection& s : sections) {
    std::map<std::string, std::shared_ptr<jit::LibraryImage>> by_name;
    for (jit::KernelRecord& k : s.kernels) {
      std::shared_ptr<jit::LibraryImage>& image = by_name[k.library->name];
      if (!image) {
        image = std::make_shared<jit::LibraryImage>(*k.library);
        image->bytes = bytes;
        ++planted;
      }
      k.library = image;
    }
  }
  cache::write_cache_file(path, cache::FileKind::kBundle, cache::portable_fingerprint(),
                          runtime::encode_bundle(sections));
  return planted;
}

}  // namespace streamfuse::testing
