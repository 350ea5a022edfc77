// Checks of the files of a cache directory as the runtime reads them: the header and checksum,
// the payload decodes, the file sits where its contents name it (so the runtime can find it), a
// plan or prepared-ops file is of this streamfuse's format, and a kernel's library exists, is good
// and was built under the kernel's fingerprint. Used by verify and export.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.h"
#include "cache/cache_file.h"
#include "cache/prune.h"
#include "fusion/plan.h"
#include "jit/kernel_codec.h"
#include "jit/kernel_store.h"

namespace streamfuse::tools {

struct CheckedFile {
  std::filesystem::path path;
  std::string problem;   // why the file is bad; empty when it is good (or skipped)
  bool skipped = false;  // a temporary of a write that may still be in flight: neither good nor bad
                         // (one whose writer ended is bad)
  cache::FileKind kind = cache::FileKind::kPlan;  // good files
  std::string fingerprint;                        // good files
  std::string device;  // good plans, prepared ops, entries: the device their place names
  std::optional<fusion::PlanDraft> plan;                      // good plans
  std::optional<jit::KernelEntry> kernel;                     // good kernels
  std::optional<std::vector<backends::PreparedOp>> prepared;  // good prepared-ops files

  bool good() const { return problem.empty() && !skipped; }
};

class CacheChecker {
 public:
  // Checks files under `root`. With `keep_libraries`, the images of good libraries stay in memory
  // for library() (export); without, only their verdicts do.
  CacheChecker(std::filesystem::path root, bool keep_libraries);

  CheckedFile check(const cache::CacheEntry& entry);
  // The image of library `name` when it is good and libraries are kept, else nullptr. One image
  // per name, shared by its kernels.
  std::shared_ptr<const jit::LibraryImage> library(const std::string& name);

 private:
  struct LibraryVerdict {
    std::string problem;  // empty: good
    std::string fingerprint;
    std::shared_ptr<const jit::LibraryImage> image;  // when kept
  };
  // The verdict on library `name`, read from `read` when the caller has read its file already.
  const LibraryVerdict& library_verdict(const std::string& name, cache::ReadResult* read = nullptr);
  // Whether `file` was written by this streamfuse (plans and prepared ops: the runtime removes
  // those of another version); sets file.problem when not.
  bool check_portable_fingerprint(CheckedFile& file);
  void check_plan(CheckedFile& file, const std::string& payload);
  void check_prepared(CheckedFile& file, const std::string& payload);
  void check_kernel(CheckedFile& file, const std::string& payload);
  void check_handed_on(CheckedFile& file, const std::string& payload);
  void check_entries(CheckedFile& file, const std::string& payload);
  void check_held_blocks(CheckedFile& file, const std::string& payload);
  // A file of one device at path_of(root, device) (prepared ops, plan entries): sets its device,
  // or its problem ("`what` belong at `pattern`") and returns false.
  bool check_device_file(CheckedFile& file, const char* what, const char* pattern,
                         std::filesystem::path (*path_of)(const std::filesystem::path&,
                                                          std::string_view));

  std::filesystem::path root_;
  bool keep_libraries_;
  std::map<std::string, LibraryVerdict> libraries_;  // by name
};

// "checksum mismatch", "fingerprint differs (file: ...)": a rejection with its detail.
std::string rejection_text(const cache::ReadResult& r);

// Whether `device` can name a folder under plans/ and a file under prepared/: "cpu", "cuda:0",
// never a path.
bool valid_device_folder(const std::string& device);

}  // namespace streamfuse::tools
