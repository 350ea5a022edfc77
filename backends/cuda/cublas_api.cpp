#include "backends/cuda/cublas_api.h"

#include <dlfcn.h>

#include <memory>
#include <vector>

#include "core/environment.h"
#include "streamfuse/error.h"

namespace streamfuse::backends::cuda {
namespace {

struct Loaded {
  std::unique_ptr<Cublas> cublas;
  std::string reason;
};

// The soname's major version is the ABI of the headers: CUBLAS_VER_MAJOR, which has been the
// Toolkit's major version since CUDA 11.
std::vector<std::string> candidates() {
  if (auto v = core::env_text("STREAMFUSE_CUBLAS")) return {std::move(*v)};
  return {"libcublas.so." + std::to_string(CUBLAS_VER_MAJOR), "libcublas.so"};
}

// Sets `fn` to the exported `symbol`. The versioned names (cublasCreate_v2, ...) are the ones
// <cublas_v2.h> maps the plain names to; the plain exports are the legacy API's.
template <class Fn>
void resolve(void* lib, const char* symbol, Fn& fn, std::string& missing) {
  fn = reinterpret_cast<Fn>(dlsym(lib, symbol));
  if (!fn && missing.empty()) missing = symbol;
}

// Opens the first library that loads and resolves every entry point. The handle is never closed:
// handles made through it may be destroyed while the process exits.
Loaded load() {
  void* lib = nullptr;
  std::string name, tried;
  for (const std::string& candidate : candidates()) {
    lib = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      name = candidate;
      break;
    }
    const char* e = dlerror();
    tried += (tried.empty() ? "" : "; ") + std::string(e ? e : candidate.c_str());
  }
  if (!lib)
    return {nullptr, "cuBLAS could not be loaded (" + tried +
                         "); install the CUDA Toolkit's cuBLAS or set STREAMFUSE_CUBLAS to the "
                         "path of libcublas.so"};
  auto c = std::make_unique<Cublas>();
  c->library = name;
  std::string missing;
  resolve(lib, "cublasCreate_v2", c->create, missing);
  resolve(lib, "cublasDestroy_v2", c->destroy, missing);
  resolve(lib, "cublasSetStream_v2", c->set_stream, missing);
  resolve(lib, "cublasSetMathMode", c->set_math_mode, missing);
  resolve(lib, "cublasGemmEx_64", c->gemm_ex, missing);
  resolve(lib, "cublasGemmStridedBatchedEx_64", c->gemm_strided_batched_ex, missing);
  if (!missing.empty())
    return {nullptr, name + " lacks the entry point " + missing +
                         ": it is not cuBLAS, or one older than 12.0; install the CUDA "
                         "Toolkit's cuBLAS"};
  std::string optional;  // their absence only costs describe() the status names
  resolve(lib, "cublasGetStatusName", c->get_status_name, optional);
  resolve(lib, "cublasGetStatusString", c->get_status_string, optional);
  return {std::move(c), {}};
}

const Loaded& loaded() {
  static const Loaded* l = new Loaded(load());  // never destroyed: see load()
  return *l;
}

}  // namespace

const Cublas* Cublas::get() { return loaded().cublas.get(); }

const std::string& Cublas::unavailable_reason() { return loaded().reason; }

const Cublas& Cublas::require(const std::string& what) {
  if (const Cublas* c = get()) return *c;
  throw DeviceError("cuda: cannot " + what + ": " + unavailable_reason());
}

void Cublas::check(cublasStatus_t status, std::string_view what) const {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string(what) + " failed: " + describe(status));
}

std::string Cublas::describe(cublasStatus_t status) const {
  // cuBLAS calls a code it does not know "unrecognized status" rather than returning null.
  const char* name = get_status_name ? get_status_name(status) : nullptr;
  if (!name || std::string_view(name).substr(0, 14) != "CUBLAS_STATUS_")
    return "cublasStatus_t " + std::to_string(static_cast<int>(status));
  const char* text = get_status_string ? get_status_string(status) : nullptr;
  if (!text || !*text) return name;
  return std::string(name) + " (" + text + ")";
}

}  // namespace streamfuse::backends::cuda
