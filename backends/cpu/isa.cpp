#include "backends/cpu/isa.h"

#include <string>
#include <string_view>

#include "core/environment.h"
#include "core/log.h"

namespace streamfuse::backends::cpu {

std::optional<int> isa_cap_from_env() {
  static constexpr std::string_view kLevels[] = {"v2", "v3", "v4"};
  const std::optional<std::size_t> i = core::env_choice("STREAMFUSE_CPU_ISA", kLevels);
  return i ? std::optional<int>(static_cast<int>(*i) + 2) : std::nullopt;
}

#if defined(__x86_64__)
namespace isa_v2 {
const KernelTable& kernel_table();
}
namespace isa_v3 {
const KernelTable& kernel_table();
}
namespace isa_v4 {
const KernelTable& kernel_table();
}

namespace {
int supported_level() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    return 4;
  // x86-64-v3 also has F16C, LZCNT and MOVBE, present on every CPU with these (Clang cannot
  // query f16c).
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("bmi2"))
    return 3;
  return 2;
}

int choose_level() {
  const int supported = supported_level();
  const std::optional<int> cap = isa_cap_from_env();
  // A cap is a most: one above what this CPU has leaves the CPU's level, as the log says.
  const int level = cap && *cap < supported ? *cap : supported;
  if (core::log_enabled(core::LogChannel::kStream))
    core::log_line(core::LogChannel::kStream,
                   "cpu kernels: x86-64-v" + std::to_string(level) +
                       (cap && *cap > supported ? " (STREAMFUSE_CPU_ISA=v" + std::to_string(*cap) +
                                                      " is above this CPU's level)"
                                                : std::string()));
  return level;
}
}  // namespace

int isa_level() {
  static const int level = choose_level();
  return level;
}

const KernelTable* kernel_table_for(int level) {
  if (level > supported_level()) return nullptr;
  switch (level) {
    case 2:
      return &isa_v2::kernel_table();
    case 3:
      return &isa_v3::kernel_table();
    case 4:
      return &isa_v4::kernel_table();
    default:
      return nullptr;
  }
}
#else
namespace isa_generic {
const KernelTable& kernel_table();
}
int isa_level() {
  // No levels here, but a bad value is refused as on x86-64.
  static const int level = [] {
    isa_cap_from_env();
    return 0;
  }();
  return level;
}
const KernelTable* kernel_table_for(int level) {
  return level == 0 ? &isa_generic::kernel_table() : nullptr;
}
#endif

const KernelTable& kernels() {
  static const KernelTable& table = *kernel_table_for(isa_level());
  return table;
}

}  // namespace streamfuse::backends::cpu
