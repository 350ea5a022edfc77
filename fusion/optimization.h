// An Optimization runs the first len() ops of a segment as something better than one op at a
// time (a fused kernel). Made by an OptimizationBuilder from relative ops, kept in a plan, and
// run on any segment that matches the plan: sizes, ids and scalar values come from the segment.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "fusion/context.h"
#include "jit/kernel_cache.h"

namespace streamfuse::fusion {

class Optimization {
 public:
  virtual ~Optimization() = default;
  // How many ops of the segment, from its first, it covers.
  virtual std::size_t len() const = 0;
  // Runs them. All or nothing: if it throws, no handle was changed, so the caller may run the
  // same ops one by one instead.
  virtual void execute(ExecutionContext& context) = 0;
  // One line for logs: "elementwise: 2 kernels, 19 ops, ...".
  virtual std::string describe() const = 0;
  // The name of its kind's codec (fusion/builders/registry.h), or empty when plans holding
  // it are kept in memory only.
  virtual std::string_view codec() const { return {}; }
  // Loads the kernels it runs that `kernels` can find on disk (reading ahead, off the thread
  // that will run it).
  virtual void read_ahead(jit::KernelCache& kernels) const { (void)kernels; }
};

}  // namespace streamfuse::fusion
