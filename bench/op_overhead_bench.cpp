// Framework overhead: ns per op recorded and executed on 1-element tensors, in steady state.
#include <benchmark/benchmark.h>

#include <streamfuse/streamfuse.h>

#include "runtime/device_runtime.h"
#include "stream/stream.h"

namespace sf = streamfuse;

namespace {

// Records `state.range(0)` element-wise ops (a = (a + b) * c, 2 ops per step, plus the drops
// of the replaced values), then one sync. Reports time per recorded op.
void BM_OpOverhead(benchmark::State& state) {
  sf::Config c = sf::config();
  c.fusion = state.range(1) != 0;
  sf::set_config(c);
  const std::int64_t steps = state.range(0) / 2;
  const sf::Tensor b = sf::full({1}, 0.5f);
  sf::stream::Stream* stream =
      sf::runtime::DeviceRuntime::get(sf::Device::cpu()).streams().current();
  const std::uint64_t recorded_before = stream->next_seq();
  for (auto _ : state) {
    sf::Tensor a = sf::ones({1});
    for (std::int64_t i = 0; i < steps; ++i) a = (a + b) * 0.5f;
    sf::synchronize();
    benchmark::DoNotOptimize(a);
  }
  // Stream ops per API op: each step also records the drops of the values it replaces.
  const double recorded = static_cast<double>(stream->next_seq() - recorded_before);
  state.counters["stream_ops_per_op"] =
      recorded / static_cast<double>(state.iterations() * steps * 2);
  state.SetItemsProcessed(state.iterations() * steps * 2);
  // Seconds per op, shown with an SI prefix (e.g. 450n = 450 ns).
  state.counters["time_per_op"] =
      benchmark::Counter(static_cast<double>(state.iterations() * steps * 2),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.SetLabel(c.fusion ? "fusion on" : "fusion off");
}

// Recording alone: ops queued against a huge bound, the sync outside the timed region.
void BM_RecordOnly(benchmark::State& state) {
  sf::Config c = sf::config();
  const sf::Config saved = c;
  c.queue_bound = 1 << 20;
  sf::set_config(c);
  const sf::Tensor b = sf::full({1}, 0.5f);
  sf::Tensor a = sf::ones({1});
  std::int64_t ops = 0;
  for (auto _ : state) {
    a = a + b;
    if (++ops % 4096 == 0) {
      state.PauseTiming();
      sf::synchronize();
      state.ResumeTiming();
    }
  }
  sf::synchronize();
  sf::set_config(saved);
  state.SetItemsProcessed(state.iterations());
}

}  // namespace

BENCHMARK(BM_OpOverhead)->ArgsProduct({{10000}, {0, 1}})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RecordOnly)->Unit(benchmark::kNanosecond);
BENCHMARK_MAIN();
