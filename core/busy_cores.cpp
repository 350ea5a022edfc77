#include "core/busy_cores.h"

#include <atomic>

namespace streamfuse::core {
namespace {
std::atomic<int> g_busy{0};
}

BusyCore::BusyCore() { g_busy.fetch_add(1, std::memory_order_relaxed); }
BusyCore::~BusyCore() { g_busy.fetch_sub(1, std::memory_order_relaxed); }

int busy_cores() { return g_busy.load(std::memory_order_relaxed); }

}  // namespace streamfuse::core
