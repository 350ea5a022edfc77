// CacheChecker and the verify command.
#include "tools/streamfuse_cache_check.h"

#include <chrono>
#include <iostream>
#include <system_error>
#include <utility>
#include <vector>

#include "cache/cache_dir.h"
#include "cache/plan_codec.h"
#include "tools/streamfuse_cache.h"

namespace streamfuse::tools {
namespace fs = std::filesystem;

namespace {

std::string a_kind(cache::FileKind kind) { return std::string("a ") + cache::file_kind_name(kind); }

bool same_path(const fs::path& a, const fs::path& b) {
  return a.lexically_normal() == b.lexically_normal();
}

}  // namespace

std::string rejection_text(const cache::ReadResult& r) {
  return std::string(cache::rejection_name(r.rejection)) +
         (r.detail.empty() ? std::string() : " (" + r.detail + ")");
}

CacheChecker::CacheChecker(fs::path root, bool keep_libraries)
    : root_(std::move(root)), keep_libraries_(keep_libraries) {}

CheckedFile CacheChecker::check(const cache::CacheEntry& entry) {
  CheckedFile file;
  file.path = entry.path;
  if (entry.temporary) {
    // A write in flight is renamed into place within moments; prune_cache removes the rest.
    if (entry.used > fs::file_time_type::clock::now() - std::chrono::hours(1))
      file.skipped = true;
    else
      file.problem = "an unfinished write (a temporary file older than an hour)";
    return file;
  }
  cache::ReadResult r = cache::inspect_cache_file(entry.path);
  if (!r) {
    file.problem = rejection_text(r);
    return file;
  }
  const std::optional<cache::FileKind> expected = cache::kind_by_extension(entry.path);
  if (expected != r.kind) {
    file.problem = a_kind(r.kind) + " file " +
                   (expected ? "where " + a_kind(*expected) + " file belongs"
                             : std::string("under a name streamfuse does not read"));
    return file;
  }
  file.kind = r.kind;
  file.fingerprint = r.fingerprint;
  if (r.kind == cache::FileKind::kPlan) {
    check_plan(file, r.payload);
  } else if (r.kind == cache::FileKind::kCpuKernel) {
    check_kernel(file, r.payload);
  } else {  // a library: named by its contents, read under its kernels' fingerprint
    const std::string name = entry.path.stem().string();
    if (!same_path(entry.path, cache::library_path(root_, name))) {
      file.problem = "in the wrong place: libraries belong in kernels/cpu/";
      return file;
    }
    file.problem = library_verdict(name, &r).problem;
  }
  return file;
}

void CacheChecker::check_plan(CheckedFile& file, const std::string& payload) {
  if (file.fingerprint != cache::plan_fingerprint()) {
    // The runtime would remove it: plans of another version are built again.
    file.problem = "written by another streamfuse (fingerprint '" + file.fingerprint +
                   "'; this one reads '" + cache::plan_fingerprint() + "')";
    return;
  }
  fusion::PlanDraft plan;
  try {
    plan = cache::decode_plan(payload);
  } catch (const std::exception& e) {
    file.problem = e.what();
    return;
  }
  // plans/<device>/<first op hash>/<plan hash>.plan: the runtime looks for a plan by its first op.
  const fs::path rel = file.path.lexically_normal().lexically_relative(root_.lexically_normal());
  std::vector<fs::path> parts(rel.begin(), rel.end());
  const std::string device = parts.size() == 4 && parts[0] == "plans" ? parts[1].string() : "";
  const fs::path expected =
      cache::plan_path(root_, device.empty() ? "<device>" : device,
                       cache::first_op_hash(plan.ops.front()), cache::plan_hash(plan.ops));
  if (device.empty() || !same_path(file.path, expected)) {
    file.problem = "in the wrong place: its ops belong at " + relative_name(root_, expected);
    return;
  }
  file.device = device;
  file.plan = std::move(plan);
}

void CacheChecker::check_kernel(CheckedFile& file, const std::string& payload) {
  cache::KernelEntry kernel;
  try {
    kernel = cache::decode_kernel_entry(payload);
  } catch (const std::exception& e) {
    file.problem = e.what();
    return;
  }
  // Named by program, key and fingerprint: the runtime finds it under no other name.
  const fs::path expected = cache::kernel_path(
      root_, cache::kernel_hash(kernel.program_hash, kernel.key, file.fingerprint));
  if (!same_path(file.path, expected)) {
    file.problem = "in the wrong place: its program, key and fingerprint name " +
                   relative_name(root_, expected);
    return;
  }
  const LibraryVerdict& library = library_verdict(kernel.library);
  if (!library.problem.empty()) {
    file.problem = "its library " + kernel.library + ".lib is bad: " + library.problem;
    return;
  }
  if (library.fingerprint != file.fingerprint) {
    file.problem = "its library " + kernel.library + ".lib was built under another fingerprint ('" +
                   library.fingerprint + "')";
    return;
  }
  file.kernel = std::move(kernel);
}

const CacheChecker::LibraryVerdict& CacheChecker::library_verdict(const std::string& name,
                                                                  cache::ReadResult* read) {
  if (const auto it = libraries_.find(name); it != libraries_.end()) return it->second;
  cache::ReadResult r =
      read ? std::move(*read) : cache::inspect_cache_file(cache::library_path(root_, name));
  LibraryVerdict verdict;
  jit::LibraryImage image;
  if (!r) {
    verdict.problem = rejection_text(r);
  } else if (r.kind != cache::FileKind::kCpuLibrary) {
    verdict.problem = a_kind(r.kind) + " file where a library belongs";
  } else {
    try {
      image = cache::decode_library(r.payload);
      if (image.name != name) verdict.problem = "it holds library " + image.name;
    } catch (const std::exception& e) {
      verdict.problem = e.what();
    }
  }
  verdict.fingerprint = r.fingerprint;
  if (verdict.problem.empty() && keep_libraries_) {
    image.fingerprint = r.fingerprint;
    verdict.image = std::make_shared<const jit::LibraryImage>(std::move(image));
  }
  return libraries_.emplace(name, std::move(verdict)).first->second;
}

std::shared_ptr<const jit::LibraryImage> CacheChecker::library(const std::string& name) {
  return library_verdict(name).image;
}

int verify_command(const fs::path& root, bool remove) {
  CacheChecker checker(root, /*keep_libraries=*/false);
  std::size_t checked = 0, bad = 0, removed = 0, in_flight = 0;
  std::string remove_error;
  for (const cache::CacheEntry& entry : cache::list_cache_entries(root)) {
    const CheckedFile file = checker.check(entry);
    if (file.skipped) {
      ++in_flight;
      continue;
    }
    ++checked;
    if (file.good()) continue;
    ++bad;
    std::cout << relative_name(root, file.path) << ": " << file.problem;
    if (remove) {
      std::error_code ec;
      if (fs::remove(file.path, ec)) {
        ++removed;
        std::cout << " (removed)";
        if (file.path.extension() == ".plan") fs::remove(file.path.parent_path(), ec);  // if empty
      } else if (ec && remove_error.empty()) {
        remove_error = "verify: cannot remove " + file.path.string() + ": " + ec.message();
      }
    }
    std::cout << '\n';
  }
  std::cout << "verified " << checked << " files: " << bad << " bad";
  if (remove) std::cout << ", " << removed << " removed";
  if (in_flight)
    std::cout << " (" << in_flight
              << (in_flight == 1 ? " temporary file of a write" : " temporary files of writes")
              << " in flight not checked)";
  std::cout << '\n';
  if (!remove_error.empty()) throw ToolError(kExitFailure, remove_error);
  if (bad)
    throw ToolError(kExitBadFiles, "verify: " + std::to_string(bad) + " of " +
                                       std::to_string(checked) + " files are bad" +
                                       (remove ? " (removed)" : "; --remove deletes them"));
  return kExitOk;
}

}  // namespace streamfuse::tools
