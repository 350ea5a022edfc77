// LibTorch eager beside streamfuse: the rows of gelu_bench and op_overhead_bench, same shapes,
// same formulas, same counters, run through LibTorch (Debian's libtorch-dev, tools/install-deps
// --peers). Torch runs with one intra-op thread per core; the count is in each row's label.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include <ATen/Parallel.h>
#include <c10/core/Allocator.h>
#include <c10/core/InferenceMode.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/types.h>
#include <torch/utils.h>
#include <torch/version.h>

namespace {

constexpr std::int64_t kNumel = 32 * 512 * 2048;
constexpr double kBytes = 2.0 * kNumel * sizeof(float);

// The three GELU formulations of bench/gelu_variants.h, op for op, with torch ops.
enum class GeluVariant { kReference, kWithReferenceErf, kWithCustomErf };
const char* const kVariantNames[] = {"Reference", "WithReferenceErf", "WithCustomErf"};

// Abramowitz & Stegun 7.1.26 for x >= 0, as bench/gelu_variants.h builds it.
torch::Tensor erf_positive(const torch::Tensor& x) {
  const float p = 0.3275911f, a1 = 0.254829592f, a2 = -0.284496736f, a3 = 1.421413741f,
              a4 = -1.453152027f, a5 = 1.061405429f;
  torch::Tensor t = torch::reciprocal(torch::abs(x) * p + 1.0f);
  torch::Tensor tmp = (((t * a5 + a4) * t + a3) * t + a2) * t + a1;
  return 1.0f - tmp * t * torch::exp(-x * x);
}
torch::Tensor erf_custom(const torch::Tensor& x) {
  return torch::where(x > 0.0f, erf_positive(x), -erf_positive(-x));
}

torch::Tensor gelu(const torch::Tensor& x, GeluVariant v) {
  switch (v) {
    case GeluVariant::kReference:
      return torch::gelu(x);  // approximate = "none": the erf form
    case GeluVariant::kWithReferenceErf:
      return x * (torch::erf(x / std::sqrt(2.0f)) + 1.0f) / 2.0f;
    case GeluVariant::kWithCustomErf:
      return x * (erf_custom(x / std::sqrt(2.0f)) + 1.0f) / 2.0f;
  }
  return {};
}

const torch::Tensor& input() {
  static const torch::Tensor x = [] {
    torch::manual_seed(0);
    return torch::randn({32, 512, 2048});
  }();
  return x;
}

int core_count() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

std::string threads_label() { return std::to_string(at::get_num_threads()) + " threads"; }

// Peak bytes held by LibTorch's default CPU allocator while installed. Uses the profiler's
// memory-reporting hook: with it in the thread's debug info, the allocator reports every
// allocation and free with its running total (counting only blocks allocated while it is on).
class PeakMemoryReporter : public c10::MemoryReportingInfoBase {
 public:
  void reportMemoryUsage(void*, int64_t, int64_t total_allocated, int64_t, c10::Device) override {
    peak_ = std::max(peak_, total_allocated);
  }
  bool memoryProfilingEnabled() const override { return true; }
  std::int64_t peak() const { return peak_; }

 private:
  std::int64_t peak_ = 0;
};

// args: variant. Eager torch computes each op before returning, so no sync is needed.
void BM_TorchGelu(benchmark::State& state) {
  const auto variant = static_cast<GeluVariant>(state.range(0));
  torch::NoGradGuard no_grad;
  const torch::Tensor& x = input();
  for (int warm_up = 0; warm_up < 3; ++warm_up) {
    torch::Tensor warm = gelu(x, variant);
    benchmark::DoNotOptimize(warm);
  }
  auto reporter = std::make_shared<PeakMemoryReporter>();
  {
    c10::DebugInfoGuard memory(c10::DebugInfoKind::PROFILER_STATE, reporter);
    for (auto _ : state) {
      torch::Tensor y = gelu(x, variant);
      benchmark::DoNotOptimize(y);
    }
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kBytes));
  // As in gelu_bench: (peak allocated during the calls + input) / (input + output).
  state.counters["peak_over_io"] =
      (static_cast<double>(reporter->peak()) + kNumel * sizeof(float)) / kBytes;
  state.SetLabel(std::string(kVariantNames[state.range(0)]) + "/libtorch-eager, " +
                 threads_label());
}

// BM_OpOverhead's loop: `state.range(0)` element-wise ops (a = (a + b) * 0.5, 2 ops per step)
// on 1-element tensors. range(1): 0 = NoGradGuard, 1 = InferenceMode.
void BM_TorchOpOverhead(benchmark::State& state) {
  const bool inference = state.range(1) != 0;
  std::optional<torch::NoGradGuard> no_grad;
  std::optional<c10::InferenceMode> inference_mode;
  if (inference)
    inference_mode.emplace();
  else
    no_grad.emplace();
  const std::int64_t steps = state.range(0) / 2;
  const torch::Tensor b = torch::full({1}, 0.5f);
  for (auto _ : state) {
    torch::Tensor a = torch::ones({1});
    for (std::int64_t i = 0; i < steps; ++i) a = (a + b) * 0.5f;
    benchmark::DoNotOptimize(a);
  }
  state.SetItemsProcessed(state.iterations() * steps * 2);
  state.counters["time_per_op"] =
      benchmark::Counter(static_cast<double>(state.iterations() * steps * 2),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.SetLabel(std::string("libtorch-eager, ") + (inference ? "InferenceMode" : "NoGradGuard") +
                 ", " + threads_label());
}

}  // namespace

BENCHMARK(BM_TorchGelu)->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_TorchOpOverhead)->ArgsProduct({{10000}, {0, 1}})->Unit(benchmark::kMicrosecond);

int main(int argc, char** argv) {
  at::set_num_threads(core_count());
  benchmark::AddCustomContext("libtorch", TORCH_VERSION);
  benchmark::AddCustomContext("libtorch_threads", std::to_string(at::get_num_threads()));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
