// The export and import commands: the cache directory's plans and kernels as one bundle file
// (cache/bundle.h, the format streamfuse::plans::save_bundle writes and load_bundle reads).
#include <algorithm>
#include <cctype>
#include <iostream>
#include <map>
#include <set>
#include <string_view>
#include <system_error>

#include "backends/cpu/isa.h"
#include "cache/bundle.h"
#include "cache/cache_dir.h"
#include "cache/kernel_codec.h"
#include "cache/plan_codec.h"
#include "cache/plan_files.h"
#include "jit/system_compiler.h"
#include "streamfuse/error.h"
#include "tools/streamfuse_cache.h"
#include "tools/streamfuse_cache_check.h"

namespace streamfuse::tools {
namespace fs = std::filesystem;

namespace {

// A bundle's device name becomes a folder under plans/: "cpu", "cuda:0", never a path.
bool valid_device_folder(const std::string& device) {
  if (device.empty() || device == "." || device == "..") return false;
  return std::all_of(device.begin(), device.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == ':' || c == '_' || c == '-' ||
           c == '.';
  });
}

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

}  // namespace

std::string this_machine_fingerprint() {
  static const std::string fingerprint = jit::kernel_fingerprint(backends::cpu::isa_level());
  return fingerprint;
}

int export_command(const fs::path& root, const fs::path& bundle) {
  std::vector<cache::CacheEntry> entries = cache::list_cache_entries(root);
  std::sort(entries.begin(), entries.end(),
            [](const cache::CacheEntry& a, const cache::CacheEntry& b) { return a.path < b.path; });
  CacheChecker checker(root, /*keep_libraries=*/true);
  std::map<std::string, cache::BundleSection> by_device;
  std::set<std::string> libraries;
  std::size_t bad = 0;
  for (const cache::CacheEntry& entry : entries) {
    CheckedFile file = checker.check(entry);
    if (file.skipped) continue;
    if (!file.good()) {
      ++bad;
      continue;
    }
    if (file.plan) {
      by_device[file.device].plans.push_back(fusion::make_plan(std::move(*file.plan)));
    } else if (file.kernel) {  // CPU kernels: with the cpu section
      cache::KernelEntry& k = *file.kernel;
      libraries.insert(k.library);
      by_device["cpu"].kernels.push_back(jit::KernelRecord{k.program_hash, std::move(k.program),
                                                           std::move(k.key), std::move(k.symbol),
                                                           checker.library(k.library)});
    }
  }
  std::vector<cache::BundleSection> sections;
  for (auto& [device, section] : by_device) {
    section.device = device;
    sections.push_back(std::move(section));
  }
  std::stable_partition(sections.begin(), sections.end(),
                        [](const cache::BundleSection& s) { return s.device == "cpu"; });

  std::vector<std::size_t> written;
  const std::string payload = cache::encode_bundle(sections, &written);
  write_file(bundle, cache::FileKind::kBundle, cache::plan_fingerprint(), payload, "export");

  std::size_t plans = 0, kernels = 0;
  std::string per_device;
  for (std::size_t i = 0; i < sections.size(); ++i) {
    plans += written[i];
    kernels += sections[i].kernels.size();
    per_device += (i ? ", " : " (") + sections[i].device + ": " +
                  plural(written[i], "plan", "plans") + (i + 1 == sections.size() ? ")" : "");
  }
  std::cout << "exported " << plural(plans, "plan", "plans") << per_device << " and "
            << plural(kernels, "kernel", "kernels") << " ("
            << plural(libraries.size(), "library", "libraries") << ") to " << bundle.string()
            << '\n';
  if (bad)
    std::cout << "left out " << plural(bad, "bad file", "bad files") << " (verify lists them)\n";
  return kExitOk;
}

int import_command(const fs::path& root, const fs::path& bundle) {
  std::vector<cache::BundleSection> sections;
  try {
    sections = cache::read_bundle(bundle);
  } catch (const Error& e) {
    std::string_view why = e.what();
    if (why.starts_with("load_bundle: ")) why.remove_prefix(13);  // the tool names its command
    throw ToolError(kExitFailure, "import: " + std::string(why));
  }
  for (const cache::BundleSection& s : sections)
    if (!valid_device_folder(s.device))
      throw ToolError(kExitFailure, "import: " + bundle.string() + " names the device '" +
                                        s.device +
                                        "', which is not a device name; nothing "
                                        "was imported");

  std::size_t plans = 0;
  for (cache::BundleSection& s : sections) {
    for (const fusion::PlanRef& plan : s.plans) {
      const fs::path path = cache::plan_path(
          root, s.device, cache::first_op_hash(plan->ops.front()), cache::plan_hash(plan->ops));
      std::optional<std::vector<fusion::Trigger>> triggers =
          cache::triggers_to_write(path, plan->ops, plan->triggers);
      ++plans;
      if (!triggers) continue;  // the directory holds this plan with all its triggers already
      std::string payload;
      try {
        payload = cache::encode_plan(
            *fusion::make_plan({plan->ops, plan->optimization, std::move(*triggers)}));
      } catch (const Error& e) {
        throw ToolError(kExitFailure, std::string("import: ") + e.what());
      }
      import_file(path, cache::FileKind::kPlan, cache::plan_fingerprint(), payload);
    }
  }

  // Kernels built for this machine: the library first, so a process that finds a kernel's record
  // finds its library (as cache/kernel_files.cpp writes them).
  const std::string here = this_machine_fingerprint();
  std::set<std::string> libraries;
  std::size_t kernels = 0, skipped = 0;
  for (const cache::BundleSection& s : sections) {
    for (const jit::KernelRecord& k : s.kernels) {
      const jit::LibraryImage& library = *k.library;
      if (library.fingerprint != here) {
        ++skipped;
        continue;
      }
      if (libraries.insert(library.name).second)
        import_file(cache::library_path(root, library.name), cache::FileKind::kCpuLibrary, here,
                    cache::encode_library(library));
      const cache::KernelEntry entry{k.program_hash, k.program, k.key, k.symbol, library.name};
      import_file(cache::kernel_path(root, cache::kernel_hash(k.program_hash, k.key, here)),
                  cache::FileKind::kCpuKernel, here, cache::encode_kernel_entry(entry));
      ++kernels;
    }
  }
  std::cout << "imported " << plural(plans, "plan", "plans") << " and "
            << plural(kernels, "kernel", "kernels") << " ("
            << plural(libraries.size(), "library", "libraries") << ") into " << root.string()
            << '\n';
  if (skipped)
    std::cout << "skipped " << plural(skipped, "kernel", "kernels")
              << " built for another machine (another compiler, CPU level or streamfuse "
                 "version); streamfuse compiles them here when a program needs them\n";
  return kExitOk;
}

}  // namespace streamfuse::tools
