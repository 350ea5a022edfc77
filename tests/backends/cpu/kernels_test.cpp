// The CPU kernels directly: ISA levels agree; Philox matches its published
// answers; copies across layouts and dtypes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "backends/backend.h"
#include "backends/cpu/isa.h"
#include "backends/cpu/kernels/kernels.h"
#include "core/float16.h"

namespace core = streamfuse::core;

namespace cpu = streamfuse::backends::cpu;
using streamfuse::Shape;
using namespace streamfuse;  // dtypes (kF32, ...)

namespace {

std::vector<const cpu::KernelTable*> supported_tables() {
  std::vector<const cpu::KernelTable*> t;
  for (int level : {2, 3, 4})
    if (const cpu::KernelTable* table = cpu::kernel_table_for(level)) t.push_back(table);
  return t;
}

TEST(KernelsTest, TheChosenTableIsTheBestSupported) {
  EXPECT_EQ(cpu::kernels().isa, supported_tables().back()->isa);
}

// Levels with FMA (v3, v4) run the same operations, only wider: the same bits. The baseline
// (v2) has no FMA, so its polynomials round differently, within the math functions' bound.
TEST(KernelsTest, IsaLevelsAgree) {
  const auto tables = supported_tables();
  if (tables.size() < 2) GTEST_SKIP() << "this CPU supports only " << tables[0]->isa;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-20, 20);
  const std::int64_t n = 70001;  // several chunks and a tail
  std::vector<float> a(n), b(n);
  for (auto& x : a) x = u(rng);
  for (auto& x : b) x = u(rng);
  const Shape shape{n};
  for (core::OpKind kind :
       {core::OpKind::kExp, core::OpKind::kLog, core::OpKind::kSin, core::OpKind::kCos,
        core::OpKind::kTanh, core::OpKind::kErf, core::OpKind::kSigmoid, core::OpKind::kSqrt,
        core::OpKind::kRsqrt, core::OpKind::kAdd, core::OpKind::kDiv, core::OpKind::kPow,
        core::OpKind::kMaximum}) {
    std::vector<std::vector<float>> results;
    for (const cpu::KernelTable* t : tables) {
      std::vector<float> out(n);
      cpu::ElementwiseArgs args;
      args.kind = kind;
      args.compute = kF32;
      args.shape = shape;
      const bool binary = core::op_category(kind) == core::OpCategory::kBinary;
      args.num_inputs = binary ? 2 : 1;
      args.inputs[0] = {reinterpret_cast<char*>(a.data()), kF32, {1}};
      args.inputs[1] = {reinterpret_cast<char*>(b.data()), kF32, {1}};
      args.output = {reinterpret_cast<char*>(out.data()), kF32, {1}};
      args.num_threads = 1;
      t->elementwise(args);
      results.push_back(std::move(out));
    }
    for (std::size_t i = 2; i < results.size(); ++i)
      EXPECT_EQ(std::memcmp(results[1].data(), results[i].data(), sizeof(float) * n), 0)
          << core::op_name(kind) << ": " << tables[1]->isa << " vs " << tables[i]->isa;
    for (std::int64_t j = 0; j < n; ++j) {
      const float x = results[0][static_cast<std::size_t>(j)],
                  y = results[1][static_cast<std::size_t>(j)];
      if (x == y || (x != x && y != y)) continue;
      const double ulp = std::ldexp(1.0, std::max(std::ilogb(y), -126) - 23);
      ASSERT_LE(std::fabs(static_cast<double>(x) - y) / ulp, 2.0)
          << core::op_name(kind) << " at " << a[static_cast<std::size_t>(j)] << ": " << x << " vs "
          << y;
    }
  }
}

TEST(KernelsTest, PhiloxMatchesTheRandom123KnownAnswers) {
  // Philox4x32-10 with counter 0 and key 0 (Random123's kat_vectors): the first four uniform
  // values are the four output words' top 24 bits scaled by 2^-24.
  const std::uint32_t want[4] = {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u};
  float out[4];
  cpu::kernels().random(
      {core::OpKind::kRandUniform, kF32, out, 4, /*seed=*/0, /*offset=*/0, 0.0, 1.0, 1});
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], static_cast<float>(want[i] >> 8) * 0x1p-24f) << i;
}

TEST(KernelsTest, CopyConvertsAcrossLayouts) {
  // A [3, 4] f32 tensor read transposed into a contiguous [4, 3] f16 tensor.
  std::vector<float> src(12);
  for (int i = 0; i < 12; ++i) src[static_cast<std::size_t>(i)] = static_cast<float>(i) + 0.5f;
  std::vector<std::uint16_t> dst(12);
  cpu::kernels().copy({Shape{4, 3}, cpu::Operand{reinterpret_cast<char*>(src.data()), kF32, {1, 4}},
                       cpu::Operand{reinterpret_cast<char*>(dst.data()), kF16, {3, 1}}, 1});
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 3; ++c)
      EXPECT_EQ(streamfuse::core::half_bits_to_float(dst[static_cast<std::size_t>(r * 3 + c)]),
                src[static_cast<std::size_t>(c * 4 + r)]);
}

}  // namespace
