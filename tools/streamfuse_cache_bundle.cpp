// The export and import commands: the cache directory's plans, kernels and prepared ops as one
// bundle file (runtime/bundle.h, the format streamfuse::plans::save_bundle writes and load_bundle
// reads).
#include <algorithm>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <system_error>
#include <vector>

#include "backends/cpu/isa.h"
#include "backends/prepared_op_codec.h"
#include "cache/cache_dir.h"
#include "fusion/plan_codec.h"
#include "fusion/plan_files.h"
#include "jit/kernel_codec.h"
#include "jit/system_compiler.h"
#include "runtime/bundle.h"
#include "streamfuse/error.h"
#include "tools/streamfuse_cache.h"
#include "tools/streamfuse_cache_check.h"

namespace streamfuse::tools {
namespace fs = std::filesystem;

namespace {

// Writes one cache file atomically. Throws ToolError naming `command`.
void write_file(const fs::path& path, cache::FileKind kind, std::string_view fingerprint,
                std::string_view payload, const char* command) {
  try {
    cache::write_cache_file(path, kind, fingerprint, payload);
  } catch (const Error& e) {
    throw ToolError(kExitFailure, std::string(command) + ": " + e.what());
  }
}

// write_file into the cache directory, making the file's folder first.
void import_file(const fs::path& path, cache::FileKind kind, std::string_view fingerprint,
                 std::string_view payload) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec)
    throw ToolError(kExitFailure,
                    "import: cannot create " + path.parent_path().string() + ": " + ec.message());
  write_file(path, kind, fingerprint, payload, "import");
}

// "1 plan", "2 plans".
std::string plural(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// The good files of a cache directory as bundle sections (the cpu section first), the libraries
// their kernels use, and how many bad files were left out.
struct Collected {
  std::vector<runtime::BundleSection> sections;
  std::set<std::string> libraries;
  std::size_t bad = 0;
};

Collected collect_sections(const fs::path& root) {
  std::vector<cache::CacheEntry> entries = cache::list_cache_entries(root);
  std::sort(entries.begin(), entries.end(),
            [](const cache::CacheEntry& a, const cache::CacheEntry& b) { return a.path < b.path; });
  CacheChecker checker(root, /*keep_libraries=*/true);
  std::map<std::string, runtime::BundleSection> by_device;
  Collected c;
  for (const cache::CacheEntry& entry : entries) {
    CheckedFile file = checker.check(entry);
    if (file.skipped) continue;
    if (!file.good()) {
      ++c.bad;
      continue;
    }
    if (file.plan) {
      by_device[file.device].plans.push_back(fusion::make_plan(std::move(*file.plan)));
    } else if (file.kernel) {  // CPU kernels: with the cpu section
      jit::KernelEntry& k = *file.kernel;
      c.libraries.insert(k.library);
      by_device["cpu"].kernels.push_back(jit::KernelRecord{k.program_hash, std::move(k.program),
                                                           std::move(k.key), std::move(k.symbol),
                                                           checker.library(k.library)});
    } else if (file.prepared) {  // one file per device: a device without plans gets a section too
      by_device[file.device].prepared = std::move(*file.prepared);
    }
  }
  for (auto& [device, section] : by_device) {
    section.device = device;
    c.sections.push_back(std::move(section));
  }
  std::stable_partition(c.sections.begin(), c.sections.end(),
                        [](const runtime::BundleSection& s) { return s.device == "cpu"; });
  return c;
}

// Writes the bundle's plans that the directory lacks (or holds with fewer triggers); returns how
// many plans the bundle had.
std::size_t import_plans(const fs::path& root,
                         const std::vector<runtime::BundleSection>& sections) {
  std::size_t plans = 0;
  for (const runtime::BundleSection& s : sections) {
    for (const fusion::PlanRef& plan : s.plans) {
      const fs::path path = cache::plan_path(
          root, s.device, fusion::first_op_hash(plan->ops.front()), fusion::plan_hash(plan->ops));
      std::optional<fusion::PlanDraft> merged = fusion::plan_to_write(path, *plan);
      ++plans;
      if (!merged) continue;  // the directory holds this plan with all its triggers already
      std::string payload;
      try {
        payload = fusion::encode_plan(*fusion::make_plan(std::move(*merged)));
      } catch (const Error& e) {
        throw ToolError(kExitFailure, std::string("import: ") + e.what());
      }
      import_file(path, cache::FileKind::kPlan, cache::portable_fingerprint(), payload);
    }
  }
  return plans;
}

struct ImportedKernels {
  std::size_t kernels = 0, libraries = 0, skipped = 0;
};

// Writes the kernels built for this machine: the library first, so a process that finds a
// kernel's record finds its library (as jit/kernel_files.cpp writes them).
ImportedKernels import_kernels(const fs::path& root,
                               const std::vector<runtime::BundleSection>& sections) {
  const std::string here = this_machine_fingerprint();
  std::set<std::string> libraries;
  ImportedKernels n;
  for (const runtime::BundleSection& s : sections) {
    for (const jit::KernelRecord& k : s.kernels) {
      const jit::LibraryImage& library = *k.library;
      if (library.fingerprint != here) {
        ++n.skipped;
        continue;
      }
      if (libraries.insert(library.name).second)
        import_file(cache::library_path(root, library.name), cache::FileKind::kCpuLibrary, here,
                    jit::encode_library(library));
      const jit::KernelEntry entry{k.program_hash, k.program, k.key, k.symbol, library.name};
      import_file(
          cache::kernel_path(root, k.program_hash, jit::kernel_hash(k.program_hash, k.key, here)),
          cache::FileKind::kCpuKernel, here, jit::encode_kernel_entry(entry));
      ++n.kernels;
    }
  }
  n.libraries = libraries.size();
  return n;
}

bool contains(const std::vector<backends::PreparedOp>& ops, const backends::PreparedOp& op) {
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

// Merges a section's prepared ops into prepared/<device>.ops as backends/prepared_op_files.cpp
// does: the bundle's first, then the file's others, at most kMaxPreparedOps (a bad file is
// replaced). Returns how many of the bundle's ops the file holds; writes only when the file
// changes.
std::size_t import_prepared_ops(const fs::path& root, const runtime::BundleSection& s) {
  std::vector<backends::PreparedOp> ops;
  for (const backends::PreparedOp& op : s.prepared)
    if (!contains(ops, op)) ops.push_back(op);
  if (ops.size() > backends::kMaxPreparedOps) ops.resize(backends::kMaxPreparedOps);
  const std::size_t imported = ops.size();
  if (ops.empty()) return 0;
  const fs::path path = cache::prepared_ops_path(root, s.device);
  std::optional<std::vector<backends::PreparedOp>> existing;
  if (const cache::ReadResult r = cache::read_cache_file(path, cache::FileKind::kPreparedOps,
                                                         cache::portable_fingerprint())) {
    try {
      existing = backends::decode_prepared_ops(r.payload);
    } catch (const cache::FormatError&) {  // replaced by the bundle's
    }
  }
  if (existing)
    for (const backends::PreparedOp& op : *existing)
      if (ops.size() < backends::kMaxPreparedOps && !contains(ops, op)) ops.push_back(op);
  if (existing == ops) return imported;  // the file holds these already, in this order
  std::string payload;
  try {
    payload = backends::encode_prepared_ops(ops);
  } catch (const Error& e) {
    throw ToolError(kExitFailure, std::string("import: ") + e.what());
  }
  import_file(path, cache::FileKind::kPreparedOps, cache::portable_fingerprint(), payload);
  return imported;
}

}  // namespace

std::string this_machine_fingerprint() {
  static const std::string fingerprint = jit::kernel_fingerprint(backends::cpu::isa_level());
  return fingerprint;
}

int export_command(const fs::path& root, const fs::path& bundle) {
  const Collected c = collect_sections(root);
  std::vector<std::size_t> written;
  const std::string payload = runtime::encode_bundle(c.sections, &written);
  write_file(bundle, cache::FileKind::kBundle, cache::portable_fingerprint(), payload, "export");

  std::size_t plans = 0, kernels = 0, prepared = 0;
  std::string per_device;
  for (std::size_t i = 0; i < c.sections.size(); ++i) {
    plans += written[i];
    kernels += c.sections[i].kernels.size();
    prepared += c.sections[i].prepared.size();
    per_device += (i ? ", " : " (") + c.sections[i].device + ": " +
                  plural(written[i], "plan", "plans") + (i + 1 == c.sections.size() ? ")" : "");
  }
  std::cout << "exported " << plural(plans, "plan", "plans") << per_device << ", "
            << plural(kernels, "kernel", "kernels") << " ("
            << plural(c.libraries.size(), "library", "libraries") << ") and "
            << plural(prepared, "prepared op", "prepared ops") << " to " << bundle.string() << '\n';
  if (c.bad)
    std::cout << "left out " << plural(c.bad, "bad file", "bad files") << " (verify lists them)\n";
  return kExitOk;
}

int import_command(const fs::path& root, const fs::path& bundle, bool native_code) {
  std::vector<runtime::BundleSection> sections;
  try {
    // Without native code, the libraries are dropped as the bundle is read: no byte of them
    // reaches DIR, where streamfuse would load them.
    sections = runtime::read_bundle(
        bundle, native_code ? runtime::NativeCode::kKeep : runtime::NativeCode::kDrop);
  } catch (const Error& e) {
    std::string_view why = e.what();
    if (why.starts_with("load_bundle: ")) why.remove_prefix(13);  // the tool names its command
    throw ToolError(kExitFailure, "import: " + std::string(why));
  }
  for (const runtime::BundleSection& s : sections)
    if (!valid_device_folder(s.device))
      throw ToolError(kExitFailure, "import: " + bundle.string() + " names the device '" +
                                        s.device +
                                        "', which is not a device name; nothing "
                                        "was imported");

  const std::size_t plans = import_plans(root, sections);
  ImportedKernels k;
  std::size_t left_out = 0;
  if (native_code)
    k = import_kernels(root, sections);
  else
    for (const runtime::BundleSection& s : sections) left_out += s.kernels.size();
  std::size_t prepared = 0, held = 0;
  for (const runtime::BundleSection& s : sections) {
    prepared += import_prepared_ops(root, s);
    held += s.held.empty() ? 0 : 1;
  }
  std::cout << "imported " << plural(plans, "plan", "plans") << ", "
            << plural(k.kernels, "kernel", "kernels") << " ("
            << plural(k.libraries, "library", "libraries") << ") and "
            << plural(prepared, "prepared op", "prepared ops") << " into " << root.string() << '\n';
  if (k.skipped)
    std::cout << "skipped " << plural(k.skipped, "kernel", "kernels")
              << " built for another machine (another compiler, CPU level or streamfuse "
                 "version); streamfuse compiles them here when a program needs them\n";
  if (left_out)
    std::cout << "left out " << plural(left_out, "compiled kernel", "compiled kernels")
              << " (--no-native-code); streamfuse compiles them here when a program needs "
                 "them\n";
  if (held)
    std::cout << "left out the held blocks of " << plural(held, "device", "devices")
              << " (a program's working set: DIR keeps them per program, and load_bundle makes "
                 "them in the program that loads the bundle)\n";
  return kExitOk;
}

}  // namespace streamfuse::tools
