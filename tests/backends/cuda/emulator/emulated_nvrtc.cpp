// A stand-in for libnvrtc that compiles CUDA C++ into host code for the emulated driver
// (emulated_driver.cpp): the source, after the CUDA dialect of emulated_device.h and with a
// descriptor per extern "C" kernel, is compiled by the host C++ compiler into a shared object,
// which is the program's "cubin" (and its "PTX": the emulated driver loads either). A source
// that does not compile gives NVRTC_ERROR_COMPILATION with the compiler's messages as the log.
//
// Options: the architecture must be one this NVRTC lists; --fmad=false compiles without
// contraction (-ffp-contract=off), as NVRTC then does; -D, -U, -I, --pre-include, --std and -w
// are passed on; the other NVRTC options are accepted and ignored; anything else is
// NVRTC_ERROR_INVALID_OPTION, as in NVRTC.
#include <nvrtc.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tests/backends/cuda/emulator/emulated_source.h"
#include "tests/backends/cuda/emulator/host_compiler.h"
#include "tests/backends/cuda/emulator/sanitizers.h"

namespace streamfuse::backends::cuda::emulator {
// emulated_device.h's text, embedded at build time (CMakeLists.txt).
extern const char* const kDeviceHeader;
}  // namespace streamfuse::backends::cuda::emulator

namespace emu = streamfuse::backends::cuda::emulator;

struct _nvrtcProgram {
  std::string source;
  std::string name;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string log;
  std::string image;  // after a successful compile
};

namespace {

constexpr std::array<int, 7> kArchs = {75, 80, 86, 89, 90, 100, 120};

// NVRTC options taking a value after '=' (or, for the short spellings, as the next argument)
// that only matter to a GPU code generator, separated by spaces.
constexpr std::string_view kIgnored =
    "--diag-suppress -diag-suppress --diag-error -diag-error --diag-warn -diag-warn --ftz "
    "-ftz --prec-sqrt -prec-sqrt --prec-div -prec-div --maxrregcount -maxrregcount "
    "--relocatable-device-code -rdc --dopt -dopt --builtin-move-forward "
    "--builtin-initializer-list --optimization-info -opt-info --Werror -Werror --time -time "
    "--split-compile -split-compile --ptxas-options -Xptxas --modify-stack-limit "
    "-modify-stack-limit --fdevice-time-trace -fdevice-time-trace --pch-dir -pch-dir "
    "--create-pch -create-pch --use-pch -use-pch --pch-verbose -pch-verbose --pch-messages "
    "-pch-messages --instantiate-templates-in-pch -instantiate-templates-in-pch "
    "--jump-table-density -jump-table-density --frandom-seed -frandom-seed --Ofast-compile "
    "-Ofc";
// NVRTC options without a value, likewise.
constexpr std::string_view kIgnoredFlags =
    "-G --device-debug -lineinfo --generate-line-info --use_fast_math -use_fast_math "
    "--extra-device-vectorization -extra-device-vectorization -dc -dw "
    "--device-as-default-execution-space -default-device --restrict -restrict --device-int128 "
    "-device-int128 --display-error-number -err-no --no-display-error-number -no-err-no "
    "--extensible-whole-program -ewp --dlink-time-opt -dlto --minimal -minimal --pch -pch "
    "--no-source-include -no-source-include --fdevice-syntax-only -fdevice-syntax-only "
    "--trace";

bool listed(std::string_view list, std::string_view option) {
  for (std::size_t at = 0; at < list.size();) {
    const std::size_t end = std::min(list.find(' ', at), list.size());
    if (list.substr(at, end - at) == option) return true;
    at = end + 1;
  }
  return false;
}

struct Options {
  int arch = 75;  // NVRTC 13's default, compute_75
  bool fmad = true;
  std::string std = "c++17";
  std::vector<std::string> passed;  // -D, -U, -I, -include, -w for the host compiler
};

// "sm_90", "compute_90", "sm_90a": the number; 0 when malformed.
int arch_number(std::string_view v) {
  for (std::string_view prefix : {"sm_", "compute_"})
    if (v.substr(0, prefix.size()) == prefix) return std::atoi(v.data() + prefix.size());
  return 0;
}

// Splits "--name=value" (or "-name" "value" for the options that allow it) and applies it;
// false (with a log line) for an option NVRTC would refuse.
bool apply(Options& o, const std::vector<std::string_view>& args, std::size_t& i,
           std::string& log) {
  const std::string_view arg = args[i];
  const std::size_t eq = arg.find('=');
  const std::string_view name = arg.substr(0, eq);
  std::string_view value = eq == std::string_view::npos ? std::string_view() : arg.substr(eq + 1);
  const auto next_value = [&] {
    if (eq == std::string_view::npos && i + 1 < args.size()) value = args[++i];
  };
  if (name == "--gpu-architecture" || name == "-arch") {
    next_value();
    o.arch = arch_number(value);
    if (std::find(kArchs.begin(), kArchs.end(), o.arch) == kArchs.end()) {
      log += "nvrtc: error: invalid value for --gpu-architecture (-arch)\n";
      return false;
    }
  } else if (name == "--fmad" || name == "-fmad") {
    o.fmad = value != "false";
  } else if (name == "--std" || name == "-std") {
    next_value();
    o.std = value;
  } else if (arg.substr(0, 2) == "-D" || arg.substr(0, 2) == "-U" || arg.substr(0, 2) == "-I") {
    const std::string flag(arg.substr(0, 2));
    if (arg.size() > 2)
      o.passed.push_back(std::string(arg));
    else if (i + 1 < args.size())
      o.passed.push_back(flag + std::string(args[++i]));
  } else if (name == "--define-macro" || name == "--undefine-macro" || name == "--include-path") {
    next_value();
    o.passed.push_back((name == "--define-macro"   ? "-D"
                        : name == "--include-path" ? "-I"
                                                   : "-U") +
                       std::string(value));
  } else if (name == "--pre-include" || name == "-include") {
    next_value();
    o.passed.insert(o.passed.end(), {"-include", std::string(value)});
  } else if (arg == "-w" || arg == "--disable-warnings") {
    o.passed.push_back("-w");
  } else if (listed(kIgnored, name)) {
    if (name.substr(0, 2) != "--") next_value();
  } else if (!listed(kIgnoredFlags, arg)) {
    log += "nvrtc: error: unrecognized option " + std::string(arg) + "\n";
    return false;
  }
  return true;
}

std::vector<std::string> host_flags(const Options& o) {
  // -fwrapv and -fno-strict-aliasing: a GPU wraps signed overflow and does not assume types
  // keep memory apart; -O1: kernels compile fast and still run fast enough.
  std::vector<std::string> f = {"-std=" + o.std,
                                "-O1",
                                "-shared",
                                "-fPIC",
                                "-fvisibility=hidden",
                                "-fno-math-errno",
                                "-fwrapv",
                                "-fno-strict-aliasing",
                                o.fmad ? "-ffp-contract=fast" : "-ffp-contract=off"};
  // Kernels are instrumented like the process that loads them, so that the sanitizer sees
  // their accesses to device memory (a copy racing with a kernel, a read past a buffer).
  // With -g: the driver keeps their files loaded under a sanitizer, so its reports name lines.
#if defined(SF_EMU_TSAN)
  f.insert(f.end(), {"-fsanitize=thread", "-g"});
#elif defined(SF_EMU_ASAN)
  f.insert(f.end(), {"-fsanitize=address", "-g"});
#endif
  f.insert(f.end(), o.passed.begin(), o.passed.end());
  return f;
}

}  // namespace

extern "C" {

const char* nvrtcGetErrorString(nvrtcResult result) {
#define SF_EMU_NAME(code) \
  case code:              \
    return #code;
  switch (result) {
    SF_EMU_NAME(NVRTC_SUCCESS)
    SF_EMU_NAME(NVRTC_ERROR_OUT_OF_MEMORY)
    SF_EMU_NAME(NVRTC_ERROR_PROGRAM_CREATION_FAILURE)
    SF_EMU_NAME(NVRTC_ERROR_INVALID_INPUT)
    SF_EMU_NAME(NVRTC_ERROR_INVALID_PROGRAM)
    SF_EMU_NAME(NVRTC_ERROR_INVALID_OPTION)
    SF_EMU_NAME(NVRTC_ERROR_COMPILATION)
    SF_EMU_NAME(NVRTC_ERROR_BUILTIN_OPERATION_FAILURE)
    SF_EMU_NAME(NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION)
    SF_EMU_NAME(NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION)
    SF_EMU_NAME(NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID)
    SF_EMU_NAME(NVRTC_ERROR_INTERNAL_ERROR)
    SF_EMU_NAME(NVRTC_ERROR_TIME_FILE_WRITE_FAILED)
    SF_EMU_NAME(NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED)
    SF_EMU_NAME(NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED)
    SF_EMU_NAME(NVRTC_ERROR_PCH_CREATE)
    SF_EMU_NAME(NVRTC_ERROR_CANCELLED)
    SF_EMU_NAME(NVRTC_ERROR_TIME_TRACE_FILE_WRITE_FAILED)
  }
#undef SF_EMU_NAME
  return "NVRTC_ERROR unknown";
}

nvrtcResult nvrtcVersion(int* major, int* minor) {
  if (!major || !minor) return NVRTC_ERROR_INVALID_INPUT;
  *major = 13;
  *minor = 0;
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetNumSupportedArchs(int* count) {
  if (!count) return NVRTC_ERROR_INVALID_INPUT;
  *count = static_cast<int>(kArchs.size());
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetSupportedArchs(int* archs) {
  if (!archs) return NVRTC_ERROR_INVALID_INPUT;
  std::copy(kArchs.begin(), kArchs.end(), archs);
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcCreateProgram(nvrtcProgram* prog, const char* source, const char* name,
                               int num_headers, const char* const* headers,
                               const char* const* include_names) {
  if (!prog || !source || num_headers < 0 || (num_headers > 0 && (!headers || !include_names)))
    return NVRTC_ERROR_INVALID_INPUT;
  auto* p = new _nvrtcProgram;
  p->source = source;
  p->name = name ? name : "default_program";
  for (int h = 0; h < num_headers; ++h)
    p->headers.emplace_back(include_names[h], headers[h] ? headers[h] : "");
  *prog = p;
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcDestroyProgram(nvrtcProgram* prog) {
  if (!prog || !*prog) return NVRTC_ERROR_INVALID_PROGRAM;
  delete *prog;
  *prog = nullptr;
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int num_options, const char* const* options) {
  if (!prog) return NVRTC_ERROR_INVALID_PROGRAM;
  if (num_options < 0 || (num_options > 0 && !options)) return NVRTC_ERROR_INVALID_INPUT;
  prog->log.clear();
  prog->image.clear();
  Options o;
  const std::vector<std::string_view> args(options, options + num_options);
  for (std::size_t i = 0; i < args.size(); ++i)
    if (!apply(o, args, i, prog->log)) return NVRTC_ERROR_INVALID_OPTION;
  const emu::HostCompile c = emu::compile_shared_object(
      emu::translation_unit(emu::kDeviceHeader, prog->source, prog->name), host_flags(o),
      prog->headers);
  prog->log = c.log;
  if (!c.ran) return NVRTC_ERROR_INTERNAL_ERROR;
  if (!c.ok) return NVRTC_ERROR_COMPILATION;
  prog->image = c.image;
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram prog, size_t* size) {
  if (!prog) return NVRTC_ERROR_INVALID_PROGRAM;
  if (!size) return NVRTC_ERROR_INVALID_INPUT;
  *size = prog->log.size() + 1;
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetProgramLog(nvrtcProgram prog, char* log) {
  if (!prog) return NVRTC_ERROR_INVALID_PROGRAM;
  if (!log) return NVRTC_ERROR_INVALID_INPUT;
  std::memcpy(log, prog->log.c_str(), prog->log.size() + 1);
  return NVRTC_SUCCESS;
}

// The shared object, as the cubin and as the PTX alike.
nvrtcResult nvrtcGetCUBINSize(nvrtcProgram prog, size_t* size) {
  if (!prog) return NVRTC_ERROR_INVALID_PROGRAM;
  if (!size) return NVRTC_ERROR_INVALID_INPUT;
  if (prog->image.empty()) return NVRTC_ERROR_INVALID_PROGRAM;
  *size = prog->image.size();
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetCUBIN(nvrtcProgram prog, char* cubin) {
  if (!prog) return NVRTC_ERROR_INVALID_PROGRAM;
  if (!cubin) return NVRTC_ERROR_INVALID_INPUT;
  if (prog->image.empty()) return NVRTC_ERROR_INVALID_PROGRAM;
  std::memcpy(cubin, prog->image.data(), prog->image.size());
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetPTXSize(nvrtcProgram prog, size_t* size) {
  return nvrtcGetCUBINSize(prog, size);
}
nvrtcResult nvrtcGetPTX(nvrtcProgram prog, char* ptx) { return nvrtcGetCUBIN(prog, ptx); }

}  // extern "C"
