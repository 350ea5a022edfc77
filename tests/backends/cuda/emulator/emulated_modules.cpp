#include "tests/backends/cuda/emulator/emulated_modules.h"

#include <dlfcn.h>
#include <elf.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "tests/backends/cuda/emulator/emulated_context.h"
#include "tests/backends/cuda/emulator/sanitizers.h"

namespace streamfuse::backends::cuda::emulator {
namespace {

#if defined(__x86_64__)
constexpr int kMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr int kMachine = EM_AARCH64;
#else
constexpr int kMachine = -1;  // no image loads
#endif

struct Module {
  void* handle = nullptr;
  std::string kept_file;  // under a sanitizer: the image's file, for its reports' symbols
  // Handles given out by cuModuleGetFunction: one per kernel name, stable while loaded.
  std::unordered_map<std::string, std::unique_ptr<const sf_emu_kernel*>> functions;
  ~Module() {
    if (handle) dlclose(handle);
    if (!kept_file.empty()) unlink(kept_file.c_str());
  }
};

struct Registry {
  std::mutex mutex;
  std::unordered_map<CUmodule, std::shared_ptr<Module>> modules;
  std::unordered_map<CUfunction, std::shared_ptr<Module>> functions;
};

// At exit, the files kept for modules still loaded (most are: kernel caches live to the end).
void remove_kept_files();

Registry& registry() {
  static Registry* r = [] {
    std::atexit(&remove_kept_files);
    return new Registry;  // never destroyed: see emulated_context.cpp
  }();
  return *r;
}

void remove_kept_files() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (const auto& [handle, m] : r.modules)
    if (!m->kept_file.empty()) unlink(m->kept_file.c_str());
}

// The size of the ELF shared object at `image`, 0 when it is not one for this machine. A
// module load is given a pointer only: like the driver, which reads a cubin's size from its
// headers, this takes the end of the section header table (the linker writes it last) or of
// the program header table, whichever is further.
std::size_t elf_size(const void* image) {
  Elf64_Ehdr h;
  std::memcpy(&h, image, sizeof h);
  if (std::memcmp(h.e_ident, ELFMAG, SELFMAG) != 0 || h.e_ident[EI_CLASS] != ELFCLASS64 ||
      h.e_type != ET_DYN || h.e_machine != kMachine)
    return 0;
  const std::size_t sections = h.e_shoff + std::size_t{h.e_shnum} * h.e_shentsize;
  const std::size_t segments = h.e_phoff + std::size_t{h.e_phnum} * h.e_phentsize;
  const std::size_t size = std::max(sections, segments);
  return size >= sizeof h && size < (std::size_t{1} << 30) ? size : 0;
}

// dlopens a copy of the image; nullptr (with dlerror on stderr) when it does not load. The file
// is deleted at once, or under a sanitizer kept in `kept` until the module is unloaded, so that
// its reports name the kernels' functions and lines.
void* open_image(const void* image, std::size_t size, std::string& kept) {
  const char* tmp = std::getenv("TMPDIR");
  std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/sf_emu_module_XXXXXX";
  const int fd = mkstemp(path.data());
  if (fd < 0) return nullptr;
  const char* bytes = static_cast<const char*>(image);
  std::size_t written = 0;
  while (written < size) {
    const ssize_t n = write(fd, bytes + written, size - written);
    if (n <= 0) break;
    written += static_cast<std::size_t>(n);
  }
  close(fd);
  void* handle = written == size ? dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) : nullptr;
  if (!handle && written == size) {
    const char* e = dlerror();
    std::fprintf(stderr, "streamfuse CUDA emulator: a module does not load: %s\n",
                 e ? e : "no reason given");
  }
#if defined(SF_EMU_ASAN) || defined(SF_EMU_TSAN)
  if (handle) {
    kept = path;
    return handle;
  }
#else
  (void)kept;
#endif
  unlink(path.c_str());  // the mapping keeps the file alive while loaded
  return handle;
}

}  // namespace

CUresult load_module(CUmodule* module, const void* image) {
  if (const CUresult r = check_current(); r != CUDA_SUCCESS) return r;
  if (!module || !image) return CUDA_ERROR_INVALID_VALUE;
  const std::size_t size = elf_size(image);
  if (size == 0) return CUDA_ERROR_INVALID_IMAGE;
  auto m = std::make_shared<Module>();
  m->handle = open_image(image, size, m->kept_file);
  if (!m->handle) return CUDA_ERROR_INVALID_IMAGE;
  // Built by the emulated NVRTC of this contract's version (a stale kernel cache may hold
  // images of another).
  const auto* abi = static_cast<const int*>(dlsym(m->handle, "sf_emu_module_abi"));
  if (!abi || *abi != SF_EMU_ABI_VERSION) return CUDA_ERROR_INVALID_IMAGE;
  *module = reinterpret_cast<CUmodule>(m.get());
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.modules.emplace(*module, std::move(m));
  return CUDA_SUCCESS;
}

CUresult unload_module(CUmodule module) {
  if (const CUresult r = check_current(); r != CUDA_SUCCESS) return r;
  std::shared_ptr<Module> m;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    const auto it = r.modules.find(module);
    if (it == r.modules.end()) return CUDA_ERROR_INVALID_HANDLE;
    m = std::move(it->second);
    r.modules.erase(it);
    for (const auto& [name, slot] : m->functions)
      r.functions.erase(reinterpret_cast<CUfunction>(slot.get()));
  }
  m.reset();  // dlclose, unless a queued launch still holds it; outside the lock
  return CUDA_SUCCESS;
}

CUresult get_function(CUfunction* function, CUmodule module, const char* name) {
  if (const CUresult r = check_initialized(); r != CUDA_SUCCESS) return r;
  if (!function || !name) return CUDA_ERROR_INVALID_VALUE;
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  const auto it = r.modules.find(module);
  if (it == r.modules.end()) return CUDA_ERROR_INVALID_HANDLE;
  Module& m = *it->second;
  auto& slot = m.functions[name];
  if (!slot) {
    const auto* k = static_cast<const sf_emu_kernel*>(
        dlsym(m.handle, (std::string("sf_emu_kernel_") + name).c_str()));
    if (!k || k->abi != SF_EMU_ABI_VERSION) {
      m.functions.erase(name);
      return CUDA_ERROR_NOT_FOUND;
    }
    slot = std::make_unique<const sf_emu_kernel*>(k);
    r.functions.emplace(reinterpret_cast<CUfunction>(slot.get()), it->second);
  }
  *function = reinterpret_cast<CUfunction>(slot.get());
  return CUDA_SUCCESS;
}

KernelRef find_kernel(CUfunction function) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  const auto it = r.functions.find(function);
  if (it == r.functions.end()) return {};
  return {*reinterpret_cast<const sf_emu_kernel* const*>(function), it->second};
}

}  // namespace streamfuse::backends::cuda::emulator
