// A family of small fused programs for kernel cache and kernel store tests: chain(n) computes
// out = in0 + s0 + ... + s0 (n + 1 additions), distinct for every n, checkable by running it.
#pragma once

#include <vector>

#include <gtest/gtest.h>

#include "jit/kernel_cache.h"
#include "jit/system_compiler.h"

namespace streamfuse::jit {

using core::OpKind;

inline bool have_compiler() {
  static const bool found = SystemCompiler::probe().has_value();
  return found;
}
#define REQUIRE_COMPILER() \
  if (!have_compiler()) GTEST_SKIP() << "no C++ compiler found"

// Program n: out = in0 + s0 + s0 + ... (n + 1 additions), distinct for every n.
inline FusedProgram chain(int n) {
  FusedProgram p;
  p.inputs = {kF32};
  p.scalars = {{ScalarArg::Mode::kOperand, ValueType::kFloat}};
  p.prologue.push_back({InstrKind::kLoad, core::OpKind::kAdd, ValueType::kFloat, kF16, 0, 0});
  p.prologue.push_back({InstrKind::kScalar, core::OpKind::kAdd, ValueType::kFloat, kF16, 1, 0});
  int r = 0;
  for (int i = 0; i <= n; ++i) {
    p.prologue.push_back(
        {InstrKind::kOp, core::OpKind::kAdd, ValueType::kFloat, kF16, i + 2, 0, {r, 1, -1}});
    r = i + 2;
  }
  p.outputs = {{r, kF32}};
  p.num_registers = r + 1;
  return p;
}

inline SpecializationKey flat_key() {
  SpecializationKey key;
  key.rank = 1;
  key.inputs.push_back({kF32, {}, -1});
  key.outputs.push_back({kF32, {}, -1});
  return key;
}

// Runs kernel `fn` of chain(n) on a few elements and checks out == in + (n + 1).
inline void expect_chain_result(const ReadyKernel& k, int n) {
  ASSERT_NE(k.cpu(), nullptr);
  std::vector<float> in = {0.0f, 1.0f, -7.0f, 100.0f, 2.5f}, out(in.size(), -1.0f);
  char* data[] = {reinterpret_cast<char*>(in.data()), reinterpret_cast<char*>(out.data())};
  const long long sizes[] = {static_cast<long long>(in.size())};
  const long long strides[] = {1, 1};
  const long long scalars[] = {0x3f800000};  // 1.0f
  k.cpu()(data, sizes, strides, scalars, 0, static_cast<long long>(in.size()));
  for (std::size_t i = 0; i < in.size(); ++i) EXPECT_EQ(out[i], in[i] + static_cast<float>(n + 1));
}

}  // namespace streamfuse::jit
