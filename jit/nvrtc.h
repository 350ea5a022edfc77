// NVRTC, loaded at run time: CUDA C++ source to a cubin for one GPU architecture (or PTX, which
// the driver compiles for GPUs newer than this NVRTC knows). Loading it on first use, not linking
// it, keeps the library loadable on machines without the CUDA Toolkit, where only the CPU runs.
//
// The library tried: $STREAMFUSE_NVRTC when set (a path or a soname; tests use it), else
// libnvrtc.so.<major of the Toolkit built against>, then libnvrtc.so.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace streamfuse::jit {

// What to compile for a GPU of compute capability `device_arch` (major * 10 + minor): a cubin for
// sm_<arch> when NVRTC knows the architecture; PTX for the newest compute_<arch> it knows when the
// GPU is newer than NVRTC (the driver compiles PTX for it); nothing when the GPU is older than
// every architecture NVRTC supports.
struct NvrtcTarget {
  int arch = 0;
  bool ptx = false;
  friend bool operator==(const NvrtcTarget&, const NvrtcTarget&) = default;
};
std::optional<NvrtcTarget> choose_target(int device_arch, const std::vector<int>& supported);

struct NvrtcOutput {
  std::string image;  // the cubin, or NUL-terminated PTX text
  bool is_ptx = false;
  std::string log;  // the compiler's warnings, if any
};

class Nvrtc {
 public:
  // NVRTC, loaded once; nullptr when it cannot be (why: unavailable_reason()).
  static const Nvrtc* get();
  // Why get() is nullptr ("libnvrtc.so.13: cannot open shared object file", a missing entry
  // point, ...); empty when it is not.
  static const std::string& unavailable_reason();
  // get(), or a CompileError naming the reason.
  static const Nvrtc& require();

  int major() const { return major_; }
  int minor() const { return minor_; }
  std::string version() const;  // "13.0"
  // The architectures it compiles for, as 75, 80, 90, ...
  const std::vector<int>& supported_archs() const { return archs_; }

  // Compiles `source` (whose kernels are extern "C") for sm_<arch>, or to PTX for
  // compute_<arch> when `ptx`, with `options` added. Throws CompileError with NVRTC's log when
  // the source does not compile. Thread-safe.
  NvrtcOutput compile(const std::string& source, std::string_view program_name, int arch, bool ptx,
                      const std::vector<std::string>& options) const;

  struct Api;  // the entry points (nvrtc.cpp)

 private:
  friend struct NvrtcLoader;  // nvrtc.cpp: makes the one instance
  Nvrtc() = default;
  const Api* api_ = nullptr;
  int major_ = 0, minor_ = 0;
  std::vector<int> archs_;
};

}  // namespace streamfuse::jit
