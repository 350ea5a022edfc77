#include "jit/cpu_toolchain.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "backends/cpu/isa.h"
#include "cache/cache_file.h"
#include "core/environment.h"
#include "core/log.h"
#include "jit/cpp_codegen.h"
#include "streamfuse/error.h"

namespace streamfuse::jit {
namespace {

namespace fs = std::filesystem;

// Writes `text` to `path` atomically (temp file + rename). Throws CompileError.
void write_file(const std::string& path, const std::string& text) {
  try {
    cache::write_file_atomically(path, text);
  } catch (const Error& e) {
    throw CompileError(std::string("jit: kernel source: ") + e.what());
  }
}

bool read_file(const std::string& path, std::string& bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream os;
  os << in.rdbuf();
  bytes = std::move(os).str();
  return static_cast<bool>(in);
}

bool file_equals(const std::string& path, const std::string& text) {
  std::string bytes;
  return read_file(path, bytes) && bytes == text;
}

// `directory` when it exists (or can be made) and is writable; else empty (builds use a scratch
// folder), with a warning when a directory was given.
std::string usable_directory(const std::string& directory) {
  if (directory.empty()) return directory;
  std::error_code ec;
  fs::create_directories(directory, ec);
  if (fs::is_directory(directory, ec) && access(directory.c_str(), W_OK | X_OK) == 0)
    return directory;
  core::warn_once("jit-dir:" + directory,
                  "jit: kernel directory '" + directory +
                      "' is not writable; kernels are built in a scratch folder of this process");
  return {};
}

}  // namespace

CpuToolchain::CpuToolchain(std::string directory, std::string fingerprint,
                           std::chrono::milliseconds compile_timeout,
                           std::function<fs::path()> scratch)
    : directory_(usable_directory(directory)),
      scratch_(std::move(scratch)),
      fingerprint_(fingerprint.empty() ? kernel_fingerprint(backends::cpu::isa_level())
                                       : std::move(fingerprint)),
      compile_timeout_(compile_timeout) {
  if (directory_.empty() && !scratch_) {
    scratch_ = [this] {  // made on the first build, on the compile thread
      if (!own_scratch_)
        own_scratch_ = std::make_unique<cache::ScratchArea>(cache::private_scratch_base());
      return own_scratch_->path();
    };
  }
}

CpuToolchain::~CpuToolchain() = default;

bool CpuToolchain::prepare(std::string& why) {
  compiler_ = SystemCompiler::probe();
  if (compiler_) return true;
  const std::vector<CompilerCandidate> tried = compiler_candidates();
  std::string what;
  if (!tried.front().variable.empty()) {
    what = tried.front().variable + "='" +
           core::env_text(tried.front().variable.c_str()).value_or("") +
           "' does not answer --version";
  } else {
    what = "tried c++, g++, clang++ on PATH; set STREAMFUSE_CXX or CXX to choose one";
  }
  why = "jit: no C++ compiler found (" + what + "); fused programs run in the interpreter";
  return false;
}

std::string CpuToolchain::describe() const {
  return "compiler: " + compiler_->version() + " (" + compiler_->command_line() + ")";
}

const std::string& CpuToolchain::prelude() const { return cpu_kernel_prelude(); }

std::string CpuToolchain::kernel_source(const FusedProgram& program, const SpecializationKey& key,
                                        std::string_view name) const {
  return cpu_kernel_source(program, key, name);
}

BuiltLibrary CpuToolchain::build(const std::string& source) {
  if (!directory_.empty()) return build_in(directory_, source, /*keep=*/true);
  fs::path folder;
  try {
    folder = scratch_();
  } catch (const Error& e) {
    throw CompileError(std::string("jit: no folder to build kernels in: ") + e.what());
  }
  return build_in(folder, source, /*keep=*/false);
}

BuiltLibrary CpuToolchain::build_in(const fs::path& folder, const std::string& source, bool keep) {
  BuiltLibrary out;
  out.key = compiler_->library_key(source);
  const std::string base = (folder / out.key).string();
  const std::string path = base + ".cpp";
  const std::string so = base + ".so";
  out.label = path;
  std::error_code ec;
  const std::string tmp = keep ? cache::temporary_beside(so).string() : base + ".so.tmp";
  // A scratch folder's files go once the library is loaded (dlopen keeps its mapping), or when
  // the build fails.
  struct RemoveFiles {
    std::vector<std::string> files;
    ~RemoveFiles() {
      std::error_code e;
      for (const std::string& f : files) fs::remove(f, e);
    }
  } scratch_files{keep ? std::vector<std::string>{} : std::vector<std::string>{path, so, tmp}};
  if (keep && fs::exists(so, ec) && file_equals(path, source)) {  // built before, maybe elsewhere
    try {
      out.library = load_library(so);
      if (read_file(so, out.bytes)) {
        out.reused = true;
        return out;
      }
    } catch (const CompileError&) {
      fs::remove(so, ec);  // unusable: rebuild
    }
  }
  write_file(path, source);
  try {
    compiler_->compile(path, tmp, compile_timeout_);
  } catch (...) {
    fs::remove(tmp, ec);
    throw;
  }
  if (std::rename(tmp.c_str(), so.c_str()) != 0) {
    fs::remove(tmp, ec);
    throw CompileError("jit: cannot move the library of " + path +
                       " into place: " + std::strerror(errno));
  }
  out.library = load_library(so);
  if (!read_file(so, out.bytes)) throw CompileError("jit: cannot read back " + so);
  return out;
}

std::shared_ptr<void> CpuToolchain::load(const LibraryImage& image) {
  return load_library_image(image.bytes, image.name);
}

void* CpuToolchain::find(const std::shared_ptr<void>& library, const std::string& name) {
  return find_symbol(library, name.c_str());
}

}  // namespace streamfuse::jit
