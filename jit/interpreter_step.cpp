#include "jit/interpreter_step.h"

#include <cstdint>
#include <memory>

namespace streamfuse::jit {

namespace {

// The block a thread lends its interpreters' registers from, kReusedSlotBytes and its alignment
// slack, made on the thread's first small launch.
struct ReusedBlock {
  std::unique_ptr<unsigned char[]> memory;
  bool lent = false;
};
thread_local ReusedBlock t_block;

constexpr std::size_t kBlockBytes = Slots::kReusedSlotBytes + 64;

unsigned char* aligned(unsigned char* p) {
  return reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(p) + 63) &
                                          ~std::uintptr_t{63});
}

}  // namespace

Slots::Slots(std::size_t count, std::int64_t width)
    : bytes_((static_cast<std::size_t>(width) * 8 + 63) & ~std::size_t{63}) {
  const std::size_t bytes = count * bytes_;
  if (bytes <= kReusedSlotBytes && !t_block.lent) {
    if (!t_block.memory)
      t_block.memory = std::make_unique_for_overwrite<unsigned char[]>(kBlockBytes);
    t_block.lent = reused_ = true;
    base_ = aligned(t_block.memory.get());
    return;
  }
  own_ = std::make_unique_for_overwrite<unsigned char[]>(bytes + 64);
  base_ = aligned(own_.get());
}

Slots::~Slots() {
  if (reused_) t_block.lent = false;
}

}  // namespace streamfuse::jit
