// LibTorch eager beside streamfuse: the rows of gelu_bench, op_overhead_bench and block_bench,
// same shapes, same formulas, same counters, run through LibTorch (Debian's libtorch-dev, tools/install-deps
// --peers). Torch runs with one intra-op thread per core; the count is in each row's label.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
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

// ---- block_bench's GPT-2-style block (bench/gpt2_block.h), op for op ------------------------

constexpr std::int64_t kC = 768, kHeads = 12, kHeadDim = kC / kHeads, kHidden = 4 * kC;
constexpr std::int64_t kBlockSizes[][2] = {{1, 128}, {4, 256}, {8, 512}};

struct TorchBlockWeights {
  torch::Tensor ln1_w, ln1_b, w_qkv, b_qkv, w_proj, b_proj, ln2_w, ln2_b, w_fc, b_fc, w_out, b_out;
};

const TorchBlockWeights& block_weights() {
  static const TorchBlockWeights w = [] {
    torch::manual_seed(1);
    const auto r = [](std::initializer_list<std::int64_t> s) { return torch::randn(s) * 0.02f; };
    const auto ln = [](std::int64_t n) { return 1.0f + torch::randn({n}) * 0.02f; };
    return TorchBlockWeights{ln(kC), r({kC}),     r({kC, 3 * kC}), r({3 * kC}),
                             r({kC, kC}), r({kC}), ln(kC),         r({kC}),
                             r({kC, kHidden}), r({kHidden}), r({kHidden, kC}), r({kC})};
  }();
  return w;
}

torch::Tensor head_view(const torch::Tensor& qkv, std::int64_t i) {
  return qkv.slice(2, i * kC, (i + 1) * kC)
      .reshape({qkv.size(0), qkv.size(1), kHeads, kHeadDim})
      .permute({0, 2, 1, 3});
}

torch::Tensor torch_block(const TorchBlockWeights& w, const torch::Tensor& mask, torch::Tensor x) {
  const std::int64_t batch = x.size(0), tokens = x.size(1);
  const float scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  torch::Tensor h = torch::layer_norm(x, {kC}, w.ln1_w, w.ln1_b);
  const torch::Tensor qkv = torch::matmul(h, w.w_qkv) + w.b_qkv;
  torch::Tensor scores =
      torch::matmul(head_view(qkv, 0), head_view(qkv, 1).transpose(-2, -1)) * scale;
  torch::Tensor att =
      torch::softmax(torch::where(mask, scores, -std::numeric_limits<float>::infinity()), -1);
  torch::Tensor y = torch::matmul(att, head_view(qkv, 2))
                        .permute({0, 2, 1, 3})
                        .reshape({batch, tokens, kC});
  x = x + (torch::matmul(y, w.w_proj) + w.b_proj);
  h = torch::layer_norm(x, {kC}, w.ln2_w, w.ln2_b);
  h = torch::gelu(torch::matmul(h, w.w_fc) + w.b_fc, "tanh");
  return x + (torch::matmul(h, w.w_out) + w.b_out);
}

// args: size index (block_bench's (B, T)), products only (1) or the block (0).
void BM_TorchBlock(benchmark::State& state) {
  const std::int64_t batch = kBlockSizes[state.range(0)][0], tokens = kBlockSizes[state.range(0)][1];
  const bool products = state.range(1) != 0;
  c10::InferenceMode inference;
  const TorchBlockWeights& w = block_weights();
  torch::manual_seed(3);
  const torch::Tensor x = torch::randn({batch, tokens, kC});
  const torch::Tensor mask = torch::ones({tokens, tokens}, torch::kBool).tril();
  const torch::Tensor qkv = torch::randn({batch, tokens, 3 * kC});
  const torch::Tensor q = head_view(qkv, 0), k_t = head_view(qkv, 1).transpose(-2, -1),
                      v = head_view(qkv, 2);
  const torch::Tensor att = torch::softmax(torch::randn({batch, kHeads, tokens, tokens}), -1);
  const torch::Tensor hidden = torch::randn({batch, tokens, kHidden});
  const auto run = [&] {
    if (!products) return torch_block(w, mask, x);
    torch::Tensor out[6] = {torch::matmul(x, w.w_qkv), torch::matmul(q, k_t),
                            torch::matmul(att, v),     torch::matmul(x, w.w_proj),
                            torch::matmul(x, w.w_fc),  torch::matmul(hidden, w.w_out)};
    return out[5];
  };
  for (int warm_up = 0; warm_up < 2; ++warm_up) benchmark::DoNotOptimize(run());
  for (auto _ : state) benchmark::DoNotOptimize(run());
  state.SetItemsProcessed(state.iterations() * batch * tokens);
  state.SetLabel(std::to_string(batch) + "x" + std::to_string(tokens) +
                 (products ? "/products" : "/block") + "/libtorch-eager, " + threads_label());
}

}  // namespace

BENCHMARK(BM_TorchBlock)
    ->ArgsProduct({{0, 1, 2}, {1, 0}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
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
