#include "backends/cpu/isa.h"

#include <cstdlib>
#include <string>

#include "stream/log.h"

namespace streamfuse::backends::cpu {

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
  int level = supported_level();
  if (const char* cap = std::getenv("STREAMFUSE_CPU_ISA")) {
    const std::string v(cap);
    const int asked = v == "v2" ? 2 : v == "v3" ? 3 : v == "v4" ? 4 : 0;
    if (asked == 0 || asked > level)
      stream::warn_once("cpu-isa", "STREAMFUSE_CPU_ISA=" + v +
                                       " ignored: use v2, v3 or v4, up to what this CPU "
                                       "supports (v" +
                                       std::to_string(level) + ")");
    else
      level = asked;
  }
  if (stream::log_enabled(stream::LogChannel::kStream))
    stream::log_line(stream::LogChannel::kStream, "cpu kernels: x86-64-v" + std::to_string(level));
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
int isa_level() { return 0; }
const KernelTable* kernel_table_for(int level) {
  return level == 0 ? &isa_generic::kernel_table() : nullptr;
}
#endif

const KernelTable& kernels() {
  static const KernelTable& table = *kernel_table_for(isa_level());
  return table;
}

}  // namespace streamfuse::backends::cpu
