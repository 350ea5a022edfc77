// The scratchpad a oneDNN call brings: a grow-only buffer per thread, and one buffer made ahead
// (its pages touched while a primitive is prepared) that the first thread whose own buffer is too
// small takes instead of a fresh one.
#include <gtest/gtest.h>

#include <cstdint>
#include <thread>

#include "backends/cpu/onednn_support.h"

namespace streamfuse::backends::cpu {
namespace {

// Scratchpads run on threads of their own: a thread's buffer lives with the thread.
template <class Fn>
void on_new_thread(Fn fn) {
  std::thread t(fn);
  t.join();
}

TEST(Scratchpad, AThreadGrowsItsOwnBufferAndKeepsIt) {
  on_new_thread([] {
    void* first = nullptr;
    {
      const Scratchpad pad(1000);
      first = pad.data();
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(first) % 64, 0u);
    }
    const Scratchpad smaller(500);
    EXPECT_EQ(smaller.data(), first);  // no allocation in the steady state
  });
}

TEST(Scratchpad, TheFirstThreadThatMustGrowTakesTheBufferMadeAhead) {
  ASSERT_EQ(scratchpad_ahead_bytes(), 0u);  // ctest runs each test in a process of its own
  make_scratchpad_ahead(1 << 20);
  make_scratchpad_ahead(1 << 10);  // smaller: the larger one stays
  EXPECT_EQ(scratchpad_ahead_bytes(), 1u << 20);
  on_new_thread([] {
    const void* taken = nullptr;
    {
      const Scratchpad pad(300 << 10);
      taken = pad.data();
    }
    EXPECT_EQ(scratchpad_ahead_bytes(), 0u);  // taken
    const Scratchpad grown(1 << 20);          // fits the buffer taken: no new one
    EXPECT_EQ(grown.data(), taken);
    // A buffer made ahead while this thread's own one suffices stays for another thread.
    make_scratchpad_ahead(1 << 19);
    const Scratchpad again(1 << 19);
    EXPECT_EQ(again.data(), taken);
    EXPECT_EQ(scratchpad_ahead_bytes(), 1u << 19);
  });
  make_scratchpad_ahead(2 << 20);  // grows the spare to the largest size asked for
  EXPECT_EQ(scratchpad_ahead_bytes(), 2u << 20);
  on_new_thread([] {
    const Scratchpad too_big(3 << 20);  // larger than the spare: a new buffer, the spare stays
    EXPECT_NE(too_big.data(), nullptr);
    EXPECT_EQ(scratchpad_ahead_bytes(), 2u << 20);
  });
  on_new_thread([] {
    const Scratchpad pad(2 << 20);
    EXPECT_NE(pad.data(), nullptr);
    EXPECT_EQ(scratchpad_ahead_bytes(), 0u);
  });
}

}  // namespace
}  // namespace streamfuse::backends::cpu
