#include "jit/cpu_toolchain.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "backends/cpu/isa.h"
#include "cache/cache_file.h"
#include "jit/cpp_codegen.h"
#include "stream/log.h"
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

// `directory` when it exists (or can be made) and is writable, else (or when empty) a new private
// directory.
std::string usable_directory(const std::string& directory, bool& is_private) {
  std::error_code ec;
  if (!directory.empty()) {
    fs::create_directories(directory, ec);
    if (fs::is_directory(directory, ec) && access(directory.c_str(), W_OK | X_OK) == 0) {
      is_private = false;
      return directory;
    }
  }
  std::string pattern = (fs::temp_directory_path(ec) / "streamfuse-jit-XXXXXX").string();
  if (!mkdtemp(pattern.data()))
    throw CacheError(
        "jit: kernel directory '" + directory +
        "' is not writable and no temporary directory can be made: " + std::strerror(errno));
  is_private = true;
  if (directory.empty()) return pattern;  // asked for a private one
  stream::warn_once("jit-dir:" + directory, "jit: kernel directory '" + directory +
                                                "' is not writable; compiled kernels " + "go to " +
                                                pattern + " for this process");
  return pattern;
}

}  // namespace

CpuToolchain::CpuToolchain(std::string directory, std::string fingerprint,
                           std::chrono::milliseconds compile_timeout)
    : directory_(usable_directory(directory, private_directory_)),
      fingerprint_(fingerprint.empty() ? kernel_fingerprint(backends::cpu::isa_level())
                                       : std::move(fingerprint)),
      compile_timeout_(compile_timeout) {
  if (private_directory_) {  // named now (mkdtemp), made again by each build
    std::error_code ec;
    fs::remove(directory_, ec);
  }
}

CpuToolchain::~CpuToolchain() {
  if (private_directory_) {
    std::error_code ec;
    fs::remove_all(directory_, ec);  // loaded libraries stay mapped
  }
}

bool CpuToolchain::prepare(std::string& why) {
  compiler_ = SystemCompiler::probe();
  if (compiler_) return true;
  const char* env = std::getenv("STREAMFUSE_CXX");
  why = std::string("jit: no C++ compiler found (") +
        (env && *env ? "STREAMFUSE_CXX=" + std::string(env)
                     : std::string("tried c++, g++, clang++ on PATH")) +
        "); fused programs run in the interpreter";
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
  if (!private_directory_) return build_in_directory(source);
  // A private directory holds files only while a build runs: the device runtime's cache lives
  // until the process exits, and leaving even an empty folder per process in /tmp adds up.
  std::error_code ec;
  fs::create_directories(directory_, ec);
  struct Remove {
    const std::string& dir;
    ~Remove() {
      std::error_code e;
      fs::remove_all(dir, e);
    }
  } remove{directory_};
  return build_in_directory(source);
}

BuiltLibrary CpuToolchain::build_in_directory(const std::string& source) {
  BuiltLibrary out;
  out.key = compiler_->library_key(source);
  const std::string base = (fs::path(directory_) / out.key).string();
  const std::string path = base + ".cpp";
  const std::string so = base + ".so";
  out.label = path;
  std::error_code ec;
  if (fs::exists(so, ec) && file_equals(path, source)) {  // built before, maybe by another process
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
  const std::string tmp = cache::temporary_beside(so).string();
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
