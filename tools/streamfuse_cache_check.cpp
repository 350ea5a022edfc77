// CacheChecker and the verify command.
#include "tools/streamfuse_cache_check.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <iostream>
#include <system_error>
#include <utility>
#include <vector>

#include "backends/block_files.h"
#include "backends/prepared_op_codec.h"
#include "cache/cache_dir.h"
#include "cache/op_codec.h"
#include "cache/scratch_area.h"
#include "fusion/plan_codec.h"
#include "tools/streamfuse_cache.h"

namespace streamfuse::tools {
namespace fs = std::filesystem;

namespace {

std::string a_kind(cache::FileKind kind) { return std::string("a ") + cache::file_kind_name(kind); }

bool same_path(const fs::path& a, const fs::path& b) {
  return a.lexically_normal() == b.lexically_normal();
}

// `path` relative to `root`, one part per folder.
std::vector<fs::path> parts_under(const fs::path& root, const fs::path& path) {
  const fs::path rel = path.lexically_normal().lexically_relative(root.lexically_normal());
  return std::vector<fs::path>(rel.begin(), rel.end());
}

// Removes `path`, and its folder when that is left empty and is one of a plan's first op, a
// kernel's program or a fingerprint's handed-on kernels (plans/<device>/<hash>/,
// kernels/cpu/<hash>/, kernels/cpu/handed-on/<hash>/): never plans/ or the root.
bool remove_bad_file(const fs::path& root, const fs::path& path, std::error_code& ec) {
  if (!fs::remove(path, ec)) return false;
  const fs::path folder = path.parent_path();
  if (parts_under(root, folder).size() == 3 &&
      (path.extension() == ".plan" || path.extension() == ".kernel")) {
    std::error_code ignored;
    fs::remove(folder, ignored);  // fails, as meant, while other files are there
  }
  if (parts_under(root, folder).size() == 4 && path.extension() == ".pending") {
    std::error_code ignored;
    fs::remove(folder, ignored);  // fails, as meant, while other files are there
  }
  return true;
}

}  // namespace

bool valid_device_folder(const std::string& device) {
  if (device.empty() || device == "." || device == "..") return false;
  return std::all_of(device.begin(), device.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == ':' || c == '_' || c == '-' ||
           c == '.';
  });
}

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
    // A write in flight is renamed into place within moments; one whose writer ended never is.
    if (!cache::abandoned_temporary(entry)) {
      file.skipped = true;
    } else {
      const long writer = cache::writer_of_temporary(entry.path);
      const bool old = entry.used < fs::file_time_type::clock::now() - std::chrono::hours(1);
      file.problem =
          "an abandoned write (" +
          (old ? std::string("a temporary file over an hour old")
               : "the temporary file of process " + std::to_string(writer) + ", which has ended") +
          ")";
    }
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
  switch (r.kind) {
    case cache::FileKind::kPlan:
      check_plan(file, r.payload);
      break;
    case cache::FileKind::kCpuKernel:
      check_kernel(file, r.payload);
      break;
    case cache::FileKind::kPreparedOps:
      check_prepared(file, r.payload);
      break;
    case cache::FileKind::kHandedOn:
      check_handed_on(file, r.payload);
      break;
    case cache::FileKind::kPlanEntries:
      check_entries(file, r.payload);
      break;
    case cache::FileKind::kHeldBlocks:
      check_held_blocks(file, r.payload);
      break;
    default: {  // a library: named by its contents, read under its kernels' fingerprint
      const std::string name = entry.path.stem().string();
      if (!same_path(entry.path, cache::library_path(root_, name)))
        file.problem = "in the wrong place: libraries belong in kernels/cpu/";
      else
        file.problem = library_verdict(name, &r).problem;
    }
  }
  return file;
}

bool CacheChecker::check_portable_fingerprint(CheckedFile& file) {
  if (file.fingerprint == cache::portable_fingerprint()) return true;
  // The runtime would remove it: plans and prepared ops of another version are made again.
  file.problem = "written by another streamfuse (fingerprint '" + file.fingerprint +
                 "'; this one reads '" + cache::portable_fingerprint() + "')";
  return false;
}

void CacheChecker::check_plan(CheckedFile& file, const std::string& payload) {
  if (!check_portable_fingerprint(file)) return;
  fusion::PlanDraft plan;
  try {
    plan = fusion::decode_plan(payload);
  } catch (const std::exception& e) {
    file.problem = e.what();
    return;
  }
  // plans/<device>/<first op hash>/<plan hash>.plan: the runtime looks for a plan by its first op.
  const std::vector<fs::path> parts = parts_under(root_, file.path);
  const std::string device = parts.size() == 4 && parts[0] == "plans" ? parts[1].string() : "";
  const fs::path expected =
      cache::plan_path(root_, device.empty() ? "<device>" : device,
                       fusion::first_op_hash(plan.ops.front()), fusion::plan_hash(plan.ops));
  if (device.empty() || !same_path(file.path, expected)) {
    file.problem = "in the wrong place: its ops belong at " + relative_name(root_, expected);
    return;
  }
  file.device = device;
  file.plan = std::move(plan);
}

void CacheChecker::check_prepared(CheckedFile& file, const std::string& payload) {
  if (!check_portable_fingerprint(file)) return;
  std::vector<backends::PreparedOp> ops;
  try {
    ops = backends::decode_prepared_ops(payload);
  } catch (const std::exception& e) {
    file.problem = e.what();
    return;
  }
  if (!check_device_file(file, "prepared ops", "prepared/<device>.ops", cache::prepared_ops_path))
    return;
  file.prepared = std::move(ops);
}

bool CacheChecker::check_device_file(CheckedFile& file, const char* what, const char* pattern,
                                     fs::path (*path_of)(const fs::path&, std::string_view)) {
  // The runtime of a device reads that one file (named for the device) and no other.
  const std::string device = file.path.stem().string();
  if (!valid_device_folder(device)) {
    file.problem = std::string("in the wrong place: ") + what + " belong at " + pattern +
                   ", and '" + device + "' is not a device name";
    return false;
  }
  const fs::path expected = path_of(root_, device);
  if (!same_path(file.path, expected)) {
    file.problem =
        std::string("in the wrong place: ") + what + " belong at " + relative_name(root_, expected);
    return false;
  }
  file.device = device;
  return true;
}

void CacheChecker::check_entries(CheckedFile& file, const std::string& payload) {
  if (!check_portable_fingerprint(file)) return;
  try {
    cache::decode_ops(payload);
  } catch (const std::exception& e) {
    file.problem = e.what();
    return;
  }
  check_device_file(file, "plan entries", "plans/<device>.entries", cache::plan_entries_path);
}

void CacheChecker::check_held_blocks(CheckedFile& file, const std::string& payload) {
  if (!check_portable_fingerprint(file)) return;
  try {
    backends::decode_held_blocks(payload);
  } catch (const std::exception& e) {
    file.problem = e.what();
    return;
  }
  // prepared/<device>.<program>.blocks: the device and the program's 16 hex digits.
  const std::string stem = file.path.stem().string();
  const std::size_t dot = stem.rfind('.');
  const std::string device = dot == std::string::npos ? stem : stem.substr(0, dot);
  const std::string program = dot == std::string::npos ? "" : stem.substr(dot + 1);
  const bool hex16 =
      program.size() == 16 && program.find_first_not_of("0123456789abcdef") == std::string::npos;
  if (!valid_device_folder(device) || !hex16 ||
      !same_path(file.path, cache::held_blocks_path(root_, device, program))) {
    file.problem =
        "in the wrong place: held blocks belong at prepared/<device>.<16 hex digits>.blocks";
    return;
  }
  file.device = device;
}

void CacheChecker::check_kernel(CheckedFile& file, const std::string& payload) {
  jit::KernelEntry kernel;
  try {
    kernel = jit::decode_kernel_entry(payload);
  } catch (const std::exception& e) {
    file.problem = e.what();
    return;
  }
  // Named by program, key and fingerprint: the runtime finds it under no other name.
  const fs::path expected =
      cache::kernel_path(root_, kernel.program_hash,
                         jit::kernel_hash(kernel.program_hash, kernel.key, file.fingerprint));
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

void CacheChecker::check_handed_on(CheckedFile& file, const std::string& payload) {
  try {
    jit::decode_kernel_requests(payload);
  } catch (const std::exception& e) {
    file.problem = e.what();
    return;
  }
  // kernels/cpu/handed-on/<fingerprint hash>/: the processes of that fingerprint look there.
  const fs::path expected = cache::handed_on_folder(root_, file.fingerprint);
  if (!same_path(file.path.parent_path(), expected))
    file.problem = "in the wrong place: its fingerprint names " + relative_name(root_, expected);
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
      image = jit::decode_library(r.payload);
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
  // One line per bad thing; with --remove, `erase` removes it.
  auto report = [&](const std::string& name, const fs::path& path, const std::string& problem,
                    auto erase) {
    ++bad;
    std::cout << name << ": " << problem;
    if (remove) {
      std::error_code ec;
      if (erase(ec)) {
        ++removed;
        std::cout << " (removed)";
      } else if (ec && remove_error.empty()) {
        remove_error = "verify: cannot remove " + path.string() + ": " + ec.message();
      }
    }
    std::cout << '\n';
  };
  for (const cache::CacheEntry& entry : cache::list_cache_entries(root)) {
    const CheckedFile file = checker.check(entry);
    if (file.skipped) {
      ++in_flight;
      continue;
    }
    ++checked;
    if (!file.good())
      report(relative_name(root, file.path), file.path, file.problem,
             [&](std::error_code& ec) { return remove_bad_file(root, file.path, ec); });
  }
  // Build folders of processes that ended (kernels compiling when they were killed).
  for (const fs::path& folder : cache::ScratchArea::abandoned(cache::scratch_base(root))) {
    ++checked;
    report(relative_name(root, folder) + "/", folder, "the build folder of a process that ended",
           [&](std::error_code& ec) { return fs::remove_all(folder, ec) > 0 && !ec; });
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
