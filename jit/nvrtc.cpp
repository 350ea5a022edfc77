#include "jit/nvrtc.h"

#include <cuda.h>  // CUDA_VERSION: the Toolkit's major version names the library to try first
#include <dlfcn.h>
#include <nvrtc.h>

#include <algorithm>
#include <memory>

#include "core/environment.h"
#include "streamfuse/error.h"

namespace streamfuse::jit {

struct Nvrtc::Api {
  decltype(&nvrtcGetErrorString) get_error_string;
  decltype(&nvrtcVersion) version;
  decltype(&nvrtcGetNumSupportedArchs) get_num_supported_archs;
  decltype(&nvrtcGetSupportedArchs) get_supported_archs;
  decltype(&nvrtcCreateProgram) create_program;
  decltype(&nvrtcDestroyProgram) destroy_program;
  decltype(&nvrtcCompileProgram) compile_program;
  decltype(&nvrtcGetProgramLogSize) get_program_log_size;
  decltype(&nvrtcGetProgramLog) get_program_log;
  decltype(&nvrtcGetCUBINSize) get_cubin_size;
  decltype(&nvrtcGetCUBIN) get_cubin;
  decltype(&nvrtcGetPTXSize) get_ptx_size;
  decltype(&nvrtcGetPTX) get_ptx;
};

namespace {

struct Loaded {
  std::unique_ptr<Nvrtc> nvrtc;
  std::string reason;
};

std::vector<std::string> candidates() {
  if (auto v = core::env_text("STREAMFUSE_NVRTC")) return {std::move(*v)};
  return {"libnvrtc.so." + std::to_string(CUDA_VERSION / 1000), "libnvrtc.so"};
}

template <class Fn>
bool resolve(void* lib, const char* symbol, Fn& fn, std::string& reason) {
  fn = reinterpret_cast<Fn>(dlsym(lib, symbol));
  if (!fn) reason = std::string("its library has no ") + symbol;
  return fn != nullptr;
}

}  // namespace

// Loads the library and every entry point once; the handle is never closed (kernels compiled
// through it may be compiling while the process exits).
struct NvrtcLoader {
  static Loaded load() {
    Loaded out;
    void* lib = nullptr;
    std::string tried;
    for (const std::string& name : candidates()) {
      lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (lib) break;
      const char* e = dlerror();
      tried += (tried.empty() ? "" : "; ") + std::string(e ? e : name.c_str());
    }
    if (!lib) {
      out.reason = "NVRTC could not be loaded (" + tried +
                   "); install the CUDA Toolkit or set STREAMFUSE_NVRTC to libnvrtc's path";
      return out;
    }
    static Nvrtc::Api api;
    std::string missing;
    const bool ok =
        resolve(lib, "nvrtcGetErrorString", api.get_error_string, missing) &&
        resolve(lib, "nvrtcVersion", api.version, missing) &&
        resolve(lib, "nvrtcGetNumSupportedArchs", api.get_num_supported_archs, missing) &&
        resolve(lib, "nvrtcGetSupportedArchs", api.get_supported_archs, missing) &&
        resolve(lib, "nvrtcCreateProgram", api.create_program, missing) &&
        resolve(lib, "nvrtcDestroyProgram", api.destroy_program, missing) &&
        resolve(lib, "nvrtcCompileProgram", api.compile_program, missing) &&
        resolve(lib, "nvrtcGetProgramLogSize", api.get_program_log_size, missing) &&
        resolve(lib, "nvrtcGetProgramLog", api.get_program_log, missing) &&
        resolve(lib, "nvrtcGetCUBINSize", api.get_cubin_size, missing) &&
        resolve(lib, "nvrtcGetCUBIN", api.get_cubin, missing) &&
        resolve(lib, "nvrtcGetPTXSize", api.get_ptx_size, missing) &&
        resolve(lib, "nvrtcGetPTX", api.get_ptx, missing);
    if (!ok) {
      out.reason = "NVRTC is not usable: " + missing;
      return out;
    }
    std::unique_ptr<Nvrtc> n(new Nvrtc);
    n->api_ = &api;
    int count = 0;
    if (api.version(&n->major_, &n->minor_) != NVRTC_SUCCESS ||
        api.get_num_supported_archs(&count) != NVRTC_SUCCESS || count <= 0) {
      out.reason = "NVRTC is not usable: it reports no version or no architecture";
      return out;
    }
    n->archs_.resize(static_cast<std::size_t>(count));
    if (api.get_supported_archs(n->archs_.data()) != NVRTC_SUCCESS) {
      out.reason = "NVRTC is not usable: it does not list its architectures";
      return out;
    }
    out.nvrtc = std::move(n);
    return out;
  }

  static const Loaded& loaded() {
    static const Loaded* l = new Loaded(load());  // never destroyed: see above
    return *l;
  }
};

const Nvrtc* Nvrtc::get() { return NvrtcLoader::loaded().nvrtc.get(); }

const std::string& Nvrtc::unavailable_reason() { return NvrtcLoader::loaded().reason; }

const Nvrtc& Nvrtc::require() {
  if (const Nvrtc* n = get()) return *n;
  throw CompileError("jit: cannot compile CUDA kernels: " + unavailable_reason());
}

std::optional<NvrtcTarget> choose_target(int device_arch, const std::vector<int>& supported) {
  if (supported.empty()) return std::nullopt;
  if (std::find(supported.begin(), supported.end(), device_arch) != supported.end())
    return NvrtcTarget{device_arch, false};
  const int newest = *std::max_element(supported.begin(), supported.end());
  if (device_arch > newest) return NvrtcTarget{newest, true};
  // Between two known architectures (a minor revision NVRTC does not list): the newest known
  // one below it runs there as PTX of the same major version.
  int best = 0;
  for (int a : supported)
    if (a < device_arch && a / 10 == device_arch / 10 && a > best) best = a;
  if (best) return NvrtcTarget{best, true};
  return std::nullopt;
}

std::string Nvrtc::version() const { return std::to_string(major_) + "." + std::to_string(minor_); }

NvrtcOutput Nvrtc::compile(const std::string& source, std::string_view program_name, int arch,
                           bool ptx, const std::vector<std::string>& options) const {
  const Api& f = *api_;
  const std::string name(program_name);
  nvrtcProgram prog = nullptr;
  nvrtcResult r =
      f.create_program(&prog, source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr);
  if (r != NVRTC_SUCCESS)
    throw CompileError("jit: NVRTC could not create program " + name + ": " +
                       f.get_error_string(r));
  struct Destroy {
    const Api& f;
    nvrtcProgram& p;
    ~Destroy() { f.destroy_program(&p); }
  } destroy{f, prog};

  const std::string target =
      std::string("--gpu-architecture=") + (ptx ? "compute_" : "sm_") + std::to_string(arch);
  std::vector<const char*> argv = {target.c_str()};
  for (const std::string& o : options) argv.push_back(o.c_str());
  r = f.compile_program(prog, static_cast<int>(argv.size()), argv.data());

  NvrtcOutput out;
  out.is_ptx = ptx;
  std::size_t log_size = 0;
  if (f.get_program_log_size(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    out.log.resize(log_size);
    if (f.get_program_log(prog, out.log.data()) != NVRTC_SUCCESS) out.log.clear();
    while (!out.log.empty() && (out.log.back() == '\0' || out.log.back() == '\n'))
      out.log.pop_back();
  }
  if (r != NVRTC_SUCCESS)
    throw CompileError("jit: NVRTC " + version() + " could not compile " + name + " for " +
                       target.substr(target.find('=') + 1) + ": " + f.get_error_string(r) +
                       (out.log.empty() ? "" : "\n" + out.log));

  std::size_t size = 0;
  r = ptx ? f.get_ptx_size(prog, &size) : f.get_cubin_size(prog, &size);
  if (r == NVRTC_SUCCESS) {
    out.image.resize(size);
    r = ptx ? f.get_ptx(prog, out.image.data()) : f.get_cubin(prog, out.image.data());
  }
  if (r != NVRTC_SUCCESS)
    throw CompileError("jit: NVRTC compiled " + name +
                       " but returned no image: " + f.get_error_string(r));
  return out;
}

}  // namespace streamfuse::jit
