// The libFuzzer binaries' start (fuzz preset): before fuzzing, the target's seeds are written into
// the corpus folder named on the command line (the first argument that is a folder), one file
// per seed named by a hash of its bytes, so every run starts from what the encoders make now and
// seeds of an older format simply stay behind as more inputs.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  namespace fs = std::filesystem;
  streamfuse::fuzz::set_up_process();
  for (int i = 1; i < *argc; ++i) {
    const char* arg = (*argv)[i];
    std::error_code ec;
    if (arg[0] == '-' || !fs::is_directory(arg, ec)) continue;
    for (const std::string& seed : streamfuse::fuzz::seeds()) {
      std::uint64_t h = 14695981039346656037ULL;  // FNV-1a
      for (char c : seed) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
      char name[32];
      std::snprintf(name, sizeof name, "seed-%016llx", static_cast<unsigned long long>(h));
      std::ofstream(fs::path(arg) / name, std::ios::binary) << seed;
    }
    return 0;
  }
  std::fprintf(stderr,
               "streamfuse fuzz target: no corpus folder given, so no seeds; run it as\n"
               "  %s CORPUS_DIR [libFuzzer options]\n",
               (*argv)[0]);
  return 0;
}
