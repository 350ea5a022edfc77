#include "jit/device_factory.h"

#include <array>
#include <atomic>

namespace streamfuse::jit {
namespace {

// One slot per DeviceType; constant-initialized, so registration at static initialization is
// safe in any order.
constinit std::array<std::atomic<const DeviceFactory*>, 2> g_factories{};

std::atomic<const DeviceFactory*>& slot(DeviceType type) {
  return g_factories[static_cast<std::size_t>(type)];
}

}  // namespace

void register_device_factory(DeviceType type, const DeviceFactory* factory) {
  slot(type).store(factory, std::memory_order_release);
}

const DeviceFactory* device_factory(DeviceType type) {
  const auto i = static_cast<std::size_t>(type);
  return i < g_factories.size() ? g_factories[i].load(std::memory_order_acquire) : nullptr;
}

}  // namespace streamfuse::jit
