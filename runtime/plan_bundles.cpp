// Plan bundles of the running process: the plan stores, kernel caches and prepared ops of the
// device runtimes, written to and added from a bundle file (runtime/bundle.h).
#include <cstdint>
#include <string>
#include <vector>

#include "core/log.h"
#include "jit/kernel_cache.h"
#include "runtime/bundle.h"
#include "runtime/device_runtime.h"
#include "runtime/runtime.h"

namespace streamfuse::runtime {

namespace {

std::uint64_t bytes_of(const std::vector<backends::HeldBlocks>& held) {
  std::uint64_t bytes = 0;
  for (const backends::HeldBlocks& h : held) bytes += h.capacity * h.blocks;
  return bytes;
}

}  // namespace

plans::BundleSummary save_bundle(const std::string& path) {
  std::vector<BundleSection> sections;
  for (DeviceRuntime* rt : DeviceRuntime::all()) {
    BundleSection s;
    s.device = rt->device().to_string();
    s.plans = rt->plan_store().plans();
    if (jit::KernelCache* kernels = rt->kernel_cache()) {
      kernels->wait_idle();  // what was asked for is compiled and included
      s.kernels = kernels->ready_kernels();
    }
    s.prepared = rt->used_prepared_ops();
    s.held = rt->held_blocks();
    sections.push_back(std::move(s));
  }
  const std::vector<std::size_t> plans = write_bundle(path, sections);
  plans::BundleSummary summary;
  for (std::size_t i = 0; i < sections.size(); ++i) {
    summary.plans += plans[i];
    summary.kernels += sections[i].kernels.size();
    summary.prepared_ops += sections[i].prepared.size();
    summary.held_bytes += bytes_of(sections[i].held);
  }
  if (core::log_enabled(core::LogChannel::kCache))
    core::log_line(core::LogChannel::kCache,
                   "saved bundle " + path + ": " + std::to_string(summary.plans) + " plans, " +
                       std::to_string(summary.kernels) + " kernels, " +
                       std::to_string(summary.prepared_ops) + " prepared ops, " +
                       std::to_string(summary.held_bytes) + " bytes of held blocks");
  return summary;
}

plans::BundleSummary load_bundle(const std::string& path, const plans::LoadOptions& options) {
  std::vector<BundleSection> sections = read_bundle(  // all or nothing
      path, options.load_native_code ? NativeCode::kKeep : NativeCode::kDrop);
  plans::BundleSummary summary;
  for (BundleSection& s : sections) {
    if (s.device != Device::cpu().to_string()) {
      core::warn_once("bundle-device:" + path + s.device,
                      "load_bundle: " + path + " holds plans for " + s.device +
                          ", which this build does not run; they are skipped");
      continue;
    }
    DeviceRuntime& rt = DeviceRuntime::get(Device::cpu());
    summary.plans += s.plans.size();
    rt.plan_store().add_loaded(s.plans);
    // Prepared while the process goes on starting; remembered in the cache directory like the
    // plans and kernels.
    summary.prepared_ops += s.prepared.size();
    // Added last first: the file keeps the bundle's order (the newest addition goes first).
    for (auto op = s.prepared.rbegin(); op != s.prepared.rend(); ++op)
      rt.prepared_op_files().add(*op);
    rt.preparer().submit_ops(std::move(s.prepared));
    summary.held_bytes += bytes_of(s.held);
    rt.make_bundles_blocks(s.held);
    jit::KernelCache* kernels = rt.kernel_cache();
    if (kernels && !options.load_native_code) {
      // The bundle's libraries were dropped as it was read: each kernel is asked for, so it
      // loads from this machine's own cache directory or compiles in the background.
      for (const jit::KernelRecord& k : s.kernels)
        if (kernels->find_or_request(k.program_hash, k.program, k.key))
          ++summary.kernels;
        else
          ++summary.kernels_recompiled;
      if (!s.kernels.empty() && core::log_enabled(core::LogChannel::kCache))
        core::log_line(core::LogChannel::kCache,
                       "load_bundle: " + path + ": its " + std::to_string(s.kernels.size()) +
                           " compiled kernels are not loaded (load_native_code is off); they "
                           "are compiled here");
    } else if (kernels) {
      const std::size_t ready = kernels->install(s.kernels);
      summary.kernels += ready;
      summary.kernels_recompiled += s.kernels.size() - ready;
      if (ready < s.kernels.size()) {
        std::string other;
        for (const jit::KernelRecord& k : s.kernels)
          if (k.library->fingerprint != kernels->fingerprint()) other = k.library->fingerprint;
        core::log_line(core::LogChannel::kCache,
                       "load_bundle: " + path + ": " + std::to_string(s.kernels.size() - ready) +
                           " of " + std::to_string(s.kernels.size()) + " kernels were built for " +
                           (other.empty() ? std::string("this machine but did not load")
                                          : "another machine (" + other + ")") +
                           "; they are compiled again here");
      }
    }
  }
  if (core::log_enabled(core::LogChannel::kCache))
    core::log_line(core::LogChannel::kCache,
                   "loaded bundle " + path + ": " + std::to_string(summary.plans) + " plans, " +
                       std::to_string(summary.kernels) + " kernels ready, " +
                       std::to_string(summary.prepared_ops) + " ops to prepare, " +
                       std::to_string(summary.held_bytes) + " bytes of held blocks");
  return summary;
}

}  // namespace streamfuse::runtime
