// save_bundle / load_bundle: the runtime assembles and installs bundles (runtime/plan_bundles.cpp).
#include "streamfuse/plans.h"

#include "runtime/runtime.h"

namespace streamfuse::plans {

BundleSummary save_bundle(const std::string& path) { return runtime::save_bundle(path); }

BundleSummary load_bundle(const std::string& path, const LoadOptions& options) {
  return runtime::load_bundle(path, options);
}

}  // namespace streamfuse::plans
