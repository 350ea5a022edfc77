// What the streamfuse-cache tests share: a cache directory filled once per process through the
// public API, the tool run as a process (exit status, stdout, stderr), and a fixture that gives
// each test its own copy of the filled directory.
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <streamfuse/streamfuse.h>

#include "backends/prepared_op_codec.h"
#include "cache/cache_file.h"
#include "fusion/plan_codec.h"
#include "jit/system_compiler.h"
#include "runtime/bundle.h"
#include "runtime/device_runtime.h"
#include "tests/file_text.h"
#include "tests/temp_dir.h"

namespace streamfuse::testing {

namespace sf = streamfuse;
namespace fs = std::filesystem;

// The cache directory of this process, filled once by a program that fuses
// (y = exp(x * 2 + 1)): its plan, and its compiled kernel and library when a compiler is there;
// and by a float matmul (of a transposed operand), which the CPU backend prepares in oneDNN:
// prepared/cpu.ops.
// Set before the first op, as the device runtime reads it once; removed at exit, after the
// runtime's own exit-time writes (atexit handlers run in reverse order of registration).
inline const fs::path& filled_cache() {
  static const fs::path dir = [] {
    static std::string path = [] {
      char name[] = "/tmp/streamfuse-cache-tool-XXXXXX";
      return std::string(mkdtemp(name));
    }();
    std::atexit([] { fs::remove_all(path); });
    setenv("STREAMFUSE_CACHE_DIR", path.c_str(), 1);
    sf::Config c = sf::config();
    c.cache_dir = path;
    sf::set_config(c);

    std::vector<float> values(4096);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 97) / 97;
    const sf::Tensor x = sf::from_vector(values);
    for (int i = 0; i < 4; ++i) {
      const std::vector<float> y = sf::exp(x * 2.0f + 1.0f).to_vector<float>();
      EXPECT_FLOAT_EQ(y[5], std::exp(5.0f / 97 * 2 + 1));
      if (i == 1) sf::wait_for_compiles();
    }
    sf::wait_for_compiles();

    const sf::Tensor a = sf::from_vector(std::vector<float>(64 * 32, 0.5f), sf::Shape{64, 32});
    // 8 columns: oneDNN's (a wider product runs in the one-b GEMM, which prepares nothing).
    const sf::Tensor b = sf::from_vector(std::vector<float>(8 * 32, 2.0f), sf::Shape{8, 32});
    EXPECT_FLOAT_EQ(sf::matmul(a, b.transpose(0, 1)).to_vector<float>()[7], 32.0f);

    sf::runtime::DeviceRuntime& cpu = sf::runtime::DeviceRuntime::get(sf::Device::cpu());
    cpu.plan_files().flush();
    cpu.prepared_op_files().flush();
    if (cpu.block_files()) cpu.block_files()->flush();  // written as the highs grow
    return fs::path(path);
  }();
  return dir;
}

// Whether the filled cache holds kernels: a compiler is there and the JIT compiles.
inline bool kernels_compiled() {
  return sf::config().jit == sf::JitMode::kCompile && sf::jit::SystemCompiler::probe().has_value();
}

// The prepared ops of a good prepared/<device>.ops file (a failure and none when it is not).
inline std::vector<sf::backends::PreparedOp> prepared_ops_in(const fs::path& file) {
  const sf::cache::ReadResult r = sf::cache::read_cache_file(
      file, sf::cache::FileKind::kPreparedOps, sf::cache::portable_fingerprint());
  EXPECT_TRUE(r) << file << ": " << sf::cache::rejection_name(r.rejection);
  if (!r) return {};
  return sf::backends::decode_prepared_ops(r.payload);
}

inline void write_prepared_ops(const fs::path& file,
                               const std::vector<sf::backends::PreparedOp>& ops) {
  sf::cache::write_cache_file(file, sf::cache::FileKind::kPreparedOps,
                              sf::cache::portable_fingerprint(),
                              sf::backends::encode_prepared_ops(ops));
}

inline std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct Result {
  int code = -1;
  std::string out, err;
};

// Runs the tool with `args` (shell words, already quoted where needed).
inline Result tool(const std::string& args) {
  TempDir scratch;
  const std::string err_path = scratch.path() + "/stderr";
  const std::string command = quoted(STREAMFUSE_CACHE_TOOL) + " " + args + " 2>" + quoted(err_path);
  Result r;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return r;
  char buffer[4096];
  for (std::size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) r.out.append(buffer, n);
  const int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_path);
  r.err.assign(std::istreambuf_iterator<char>(err), std::istreambuf_iterator<char>());
  return r;
}

inline std::string describe(const Result& r) {
  return "exit " + std::to_string(r.code) + "\nstdout:\n" + r.out + "stderr:\n" + r.err;
}

// A failure: one line on stderr, starting with the tool's name.
inline void expect_failure(const Result& r, int code) {
  EXPECT_EQ(r.code, code) << describe(r);
  EXPECT_EQ(r.err.rfind("streamfuse-cache: ", 0), 0u) << describe(r);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << describe(r);
}

struct Listed {
  std::string kind, status, path;
};

// The file lines of `list`, and its total line.
inline std::vector<Listed> listed(const Result& r, std::string* total = nullptr) {
  std::vector<Listed> files;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("total: ", 0) == 0) {
      if (total) *total = line;
      continue;
    }
    std::vector<std::string> fields;
    std::istringstream split(line);
    for (std::string f; std::getline(split, f, '\t');) fields.push_back(f);
    EXPECT_EQ(fields.size(), 5u) << line;
    if (fields.size() == 5) files.push_back({fields[0], fields[1], fields[4]});
  }
  return files;
}

// Each test works on its own copy of the filled cache.
class StreamfuseCacheTool : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::copy(filled_cache(), dir_.path(), fs::copy_options::recursive);
    // The copy of this process's scratch folder has no owner holding its lock: it would be a
    // build folder of an ended process.
    fs::remove_all(fs::path(dir_.path()) / "scratch");
  }
  std::string dir() const { return "--dir " + quoted(dir_.path()) + " "; }
  Result run(const std::string& args) const { return tool(dir() + args); }
  // Paths (relative to the directory) of the listed files of `kind`.
  std::vector<std::string> files(const std::string& kind) const {
    std::vector<std::string> out;
    for (const Listed& f : listed(run("list")))
      if (f.kind == kind) out.push_back(f.path);
    return out;
  }
  TempDir dir_;
};

inline constexpr const char* kNoKernels =
    "no C++ compiler on PATH (or in STREAMFUSE_CXX), or STREAMFUSE_JIT=interpret: no kernels were "
    "compiled, so there are no kernel or library files to check";

}  // namespace streamfuse::testing
