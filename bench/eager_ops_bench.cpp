// Eager element-wise kernels (fusion off: each op its own kernel) on a [4096, 3072] f32 tensor,
// the size of a GPT-2 block's MLP activations at 8 x 512: operands of the output's shape, a row
// broadcast (a bias), a column broadcast, a scalar, and one transcendental, beside a copy of the
// same bytes (the floor: one read of each operand the kernel reads in full, one write).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "bench/copy_floor.h"
#include "bench/fusion_mode.h"

namespace sf = streamfuse;

namespace {

enum Row { kSameShape, kRowBroadcast, kColumnBroadcast, kScalar, kExp };

constexpr std::int64_t kRows = 4096, kCols = 3072;

struct Inputs {
  sf::Tensor x, y, row, column;
};

const Inputs& inputs() {
  static const Inputs in = [] {
    sf::manual_seed(1);
    Inputs made{sf::randn({kRows, kCols}), sf::randn({kRows, kCols}), sf::randn({kCols}),
                sf::randn({kRows, 1})};
    sf::synchronize();
    return made;
  }();
  return in;
}

sf::Tensor compute(Row r, const Inputs& in) {
  switch (r) {
    case kSameShape:
      return in.x + in.y;
    case kRowBroadcast:
      return in.x + in.row;
    case kColumnBroadcast:
      return in.x + in.column;
    case kScalar:
      return in.x * 2.0f;
    case kExp:
      return sf::exp(in.x);
  }
  return {};
}

constexpr const char* kNames[] = {"x + y", "x + row", "x + column", "x * 2", "exp(x)"};

// Bytes a kernel must move: every full-size operand read once, the result written once.
double bytes(Row r) {
  const double full = static_cast<double>(kRows * kCols) * sizeof(float);
  return r == kSameShape ? 3 * full : 2 * full;
}

void BM_Eager(benchmark::State& state) {
  const auto r = static_cast<Row>(state.range(0));
  sf::bench::use_mode(sf::bench::kUnfused);
  const Inputs& in = inputs();
  sf::bench::warm_up([&] { return compute(r, in); });
  for (auto _ : state) {
    sf::Tensor out = compute(r, in);
    sf::synchronize();
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(
      static_cast<std::int64_t>(static_cast<double>(state.iterations()) * bytes(r)));
  state.SetLabel(kNames[r]);
}

// A copy of [4096, 3072] floats on every core: the bytes of one read and one write.
void BM_CopyFloor(benchmark::State& state) {
  const std::vector<float> x = inputs().x.to_vector<float>();
  std::vector<float> y(x.size());
  const auto n = static_cast<std::int64_t>(x.size());
  for (auto _ : state) {
    sf::bench::parallel_copy(x.data(), y.data(), n);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(static_cast<double>(state.iterations()) * 2 *
                                                    static_cast<double>(n) * sizeof(float)));
  state.SetLabel("copy");
}

}  // namespace

BENCHMARK(BM_Eager)->DenseRange(kSameShape, kExp)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CopyFloor)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_MAIN();
