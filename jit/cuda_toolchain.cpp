#include "jit/cuda_toolchain.h"

#include "core/hash_mix.h"
#include "jit/codegen_digest.h"
#include "jit/cuda_codegen.h"
#include "streamfuse/error.h"

namespace streamfuse::jit {
namespace {

// Changes whenever the generated kernels' calling convention (jit/cuda_kernel_abi.h) or the
// encoding of kernel records does (kernel files are named under it: older ones are a clean miss).
// 2: programs are blocks around an anchor. 3: reduction anchors. 4: reduction kernels take the
// rows' walk (a thread per row for column walks).
constexpr int kCudaKernelAbiVersion = 4;

std::string target_name(const NvrtcTarget& t) {
  return (t.ptx ? "compute_" : "sm_") + std::to_string(t.arch) + (t.ptx ? " ptx" : " cubin");
}

}  // namespace

CudaToolchain::CudaToolchain(std::shared_ptr<const backends::cuda::DeviceContext> device)
    : device_(std::move(device)), nvrtc_(Nvrtc::get()) {
  for (const char* o : cuda_kernel_options()) options_.emplace_back(o);
  if (nvrtc_) target_ = choose_target(device_->arch(), nvrtc_->supported_archs());
  // The prelude's text too: records name modules by program and key alone (see
  // kernel_fingerprint), and a module of an earlier prelude would compute other bits.
  fingerprint_ = "streamfuse " STREAMFUSE_VERSION " cuda-kernel-abi " +
                 std::to_string(kCudaKernelAbiVersion) + " prelude " +
                 core::hex16(core::fnv1a(cuda_kernel_prelude())) + " codegen " + codegen_digest() +
                 "; nvrtc " + (nvrtc_ ? nvrtc_->version() : std::string("none")) + "; " +
                 (target_ ? target_name(*target_) : "sm_" + std::to_string(device_->arch()));
  for (const std::string& o : options_) fingerprint_ += " " + o;
}

bool CudaToolchain::prepare(std::string& why) {
  if (!nvrtc_) {
    why = "jit: cannot compile kernels for " + device_->name() + ": " + Nvrtc::unavailable_reason();
    return false;
  }
  if (!target_) {
    why = "jit: NVRTC " + nvrtc_->version() + " cannot compile for " + device_->name() + " (sm_" +
          std::to_string(device_->arch()) + "), older than every architecture it supports";
    return false;
  }
  return true;
}

std::string CudaToolchain::describe() const {
  return "nvrtc " + nvrtc_->version() + " for " + device_->name() + " (" +
         device_->properties().name + "): " + target_name(*target_);
}

const std::string& CudaToolchain::prelude() const { return cuda_kernel_prelude(); }

std::string CudaToolchain::kernel_source(const FusedProgram& program, const SpecializationKey& key,
                                         std::string_view name) const {
  return cuda_kernel_source(program, key, name);
}

BuiltLibrary CudaToolchain::build(const std::string& source) {
  BuiltLibrary out;
  out.key = image_name(source);
  out.label = "cuda kernels " + out.key + " for " + device_->name();
  NvrtcOutput compiled =
      nvrtc_->compile(source, "sf_" + out.key, target_->arch, target_->ptx, options_);
  out.bytes = std::move(compiled.image);
  out.library = load_module(out.bytes, out.label);
  return out;
}

std::string CudaToolchain::image_name(const std::string& source) const {
  // The fingerprint names NVRTC's version, the target and the options.
  return core::hex16(core::fnv1a(source, core::fnv1a(fingerprint_)));
}

std::shared_ptr<void> CudaToolchain::load(const LibraryImage& image) {
  return load_module(image.bytes, "kernel image " + image.name);
}

std::shared_ptr<void> CudaToolchain::load_module(const std::string& bytes,
                                                 const std::string& what) {
  const backends::cuda::Driver& d = device_->driver();
  device_->make_current();
  CUmodule module = nullptr;
  // A PTX image is NUL-terminated text (NVRTC's PTX size counts the NUL); a cubin is an ELF file.
  const CUresult r = d.module_load_data_ex(&module, bytes.data(), 0, nullptr, nullptr);
  if (r != CUDA_SUCCESS)
    throw CompileError("jit: the driver could not load " + what + " on " + device_->name() + ": " +
                       d.describe(r));
  auto device = device_;
  return std::shared_ptr<void>(module, [device](void* m) {
    // Unloading needs the module's context current; at exit the driver may be gone: ignored.
    if (device->driver().ctx_set_current(device->context()) == CUDA_SUCCESS)
      device->driver().module_unload(static_cast<CUmodule>(m));
  });
}

void* CudaToolchain::find(const std::shared_ptr<void>& library, const std::string& name) {
  CUfunction fn = nullptr;
  if (device_->driver().module_get_function(&fn, static_cast<CUmodule>(library.get()),
                                            name.c_str()) != CUDA_SUCCESS)
    return nullptr;
  return fn;
}

}  // namespace streamfuse::jit
