// What the interpreters' small-launch paths must keep: registers lent from a thread's block never
// overlap registers still in use, and the one-copy gathers and scatters of dense operands give
// what the general walk gives, in the chunk's compute type (a chunk read "as" f16 holds floats).
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <vector>

#include "backends/cpu/isa.h"
#include "backends/cpu/kernels/kernels.h"
#include "backends/cpu/kernels/layout.h"
#include "core/float16.h"
#include "jit/interpreter_step.h"

namespace streamfuse::jit {
namespace {

using backends::cpu::Iteration;
using backends::cpu::Operand;
using backends::cpu::Strides;

TEST(InterpreterSlots, SlotsAliveTogetherOnOneThreadDoNotOverlap) {
  const Slots a(4, 16);
  const Slots b(4, 16);  // made while a holds the thread's block
  const auto* a0 = a[0];
  const auto* b0 = b[0];
  EXPECT_TRUE(b0 >= a[4] || a0 >= b[4]) << "the second Slots overlaps the first";
  // Every slot is 64-byte aligned and as wide as asked (16 values of 8 bytes).
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a0) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b0) % 64, 0u);
  EXPECT_GE(a[1] - a[0], 16 * 8);
}

TEST(InterpreterSlots, AThreadsBlockIsLentAgainOnceReturned) {
  const unsigned char* first = nullptr;
  {
    const Slots a(4, 16);
    first = a[0];
  }
  const Slots again(8, 32);  // still within the block
  EXPECT_EQ(again[0], first);
  const Slots large(64, kChunk);  // 512 KiB: its own memory
  EXPECT_NE(large[0], first);
  std::memset(large[63], 0, kChunk * 8);  // the whole width is there (ASan checks)
}

// Operand 0 of a [rows, cols] iteration with the given element strides.
Iteration iteration(std::int64_t rows, std::int64_t cols, const Strides& s) {
  const Strides* strides[] = {&s};
  return backends::cpu::make_iteration(Shape{rows, cols}, strides, 1);
}

TEST(InterpreterSlots, DenseGathersAndScattersMatchTheGeneralWalk) {
  const backends::cpu::ChunkOps& chunk = backends::cpu::kernels().chunk;
  std::vector<float> x(24);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 0.5f - 3.0f;
  const Strides dense{6, 1}, transposed{1, 4};  // [4, 6] row-major; [4, 6] read down columns
  const Operand xd{reinterpret_cast<char*>(x.data()), kF32, dense};
  const Operand xt{reinterpret_cast<char*>(x.data()), kF32, transposed};

  // Dense: positions [5, 17) as one run; the same values the walk gives element by element.
  std::array<float, 12> got{};
  chunk.gather(iteration(4, 6, dense), xd, 0, kF32, 5, 12, got.data());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], x[5 + i]);
  // Transposed: not dense, walked; position p is x[(p % 6) * 4 + p / 6].
  chunk.gather(iteration(4, 6, transposed), xt, 0, kF32, 5, 12, got.data());
  for (std::size_t p = 5; p < 17; ++p) EXPECT_EQ(got[p - 5], x[(p % 6) * 4 + p / 6]);

  // An f16 operand read as f16 holds floats (its compute type): no raw copy of 2-byte values.
  std::vector<std::uint16_t> h(24);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = core::float_to_half_bits(x[i]);
  const Operand hd{reinterpret_cast<char*>(h.data()), kF16, dense};
  chunk.gather(iteration(4, 6, dense), hd, 0, kF16, 0, 12, got.data());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], x[i]);
  // And an f32 operand read as f16 is copied as floats in one run.
  chunk.gather(iteration(4, 6, dense), xd, 0, kF16, 0, 12, got.data());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], x[i]);

  // Scatters: floats stored to an f32 dense operand in one run, to an f16 one converted.
  std::vector<float> out(24, -1.0f);
  const Operand od{reinterpret_cast<char*>(out.data()), kF32, dense};
  chunk.scatter(iteration(4, 6, dense), od, 0, kF32, 7, 12, got.data());
  for (std::size_t i = 0; i < out.size(); ++i)
    EXPECT_EQ(out[i], i >= 7 && i < 19 ? got[i - 7] : -1.0f) << i;
  std::vector<std::uint16_t> hout(24, 0);
  const Operand hod{reinterpret_cast<char*>(hout.data()), kF16, dense};
  chunk.scatter(iteration(4, 6, dense), hod, 0, kF16, 0, 12, got.data());
  for (std::size_t i = 0; i < 12; ++i) EXPECT_EQ(core::half_bits_to_float(hout[i]), got[i]);
}

}  // namespace
}  // namespace streamfuse::jit
