// Plan bundles: the plans, kernels and prepared ops of one or more devices in one file
// (FileKind::kBundle, under the portable plan fingerprint), and the memory the program that saved
// it held. Each library inside keeps the fingerprint it was built under, so a loader can tell
// which kernels run on its machine.
//
// Payload: the sections (device, plans, libraries, kernels, prepared ops), then one held-blocks
// record per section. Bundles written before the records existed end after the sections; they
// are read with no record.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/block_files.h"
#include "fusion/plan_store.h"
#include "jit/kernel_store.h"

namespace streamfuse::runtime {

struct BundleSection {
  std::string device;                  // "cpu", "cuda:0"
  std::vector<fusion::PlanRef> plans;  // written: those that cannot persist are skipped
  std::vector<jit::KernelRecord> kernels;
  std::vector<backends::PreparedOp> prepared;  // library ops to prepare at load
  // The blocks the saving process's allocator held at once (backends/block_files.h): made
  // ahead at load by a program with no record of its own, so that its first iteration does not
  // fault its activations in.
  std::vector<backends::HeldBlocks> held;
};

// Writes atomically. Throws CacheError naming the path. Returns the plans written per section.
std::vector<std::size_t> write_bundle(const std::filesystem::path& path,
                                      const std::vector<BundleSection>& sections);
// What read_bundle keeps of the kernels' libraries. A library's bytes are a shared object, and
// loading one runs its code: kDrop is for bundles not trusted with code.
enum class NativeCode {
  kKeep,
  // Each kernel keeps its program, key and symbol; its library becomes an image with the name
  // only (no fingerprint, source or bytes), so nothing downstream can load, compile or persist
  // the bundle's code: the kernels compile here from their programs.
  kDrop,
};

// Throws CacheError naming the path and why it is not a usable bundle (missing, not a bundle,
// other format or library version, corrupt).
std::vector<BundleSection> read_bundle(const std::filesystem::path& path,
                                       NativeCode native_code = NativeCode::kKeep);

// A bundle's payload, for tools: encode from sections / decode to sections. decode throws
// FormatError.
std::string encode_bundle(const std::vector<BundleSection>& sections,
                          std::vector<std::size_t>* plans_written = nullptr);
std::vector<BundleSection> decode_bundle(std::string_view payload);

}  // namespace streamfuse::runtime
