// GELU from Burn's fusion benchmark on cuda:0, f32 (32, 512, 2048): the three formulations with
// fusion off (an eager kernel per op) and on, beside a device-to-device copy of the same bytes
// (the bandwidth limit: a fused GELU reads and writes each element once, as the copy does).
// Timed with CUDA events on the stream the work runs on (manual time); bytes processed = input
// read + output written. Skips every benchmark without a GPU. The PyTorch peer on the same GPU
// is bench/torch_gpu_gelu.py. Results: bench/README.md.
#include <benchmark/benchmark.h>

#include <cuda.h>

#include <string>

#include "backends/cuda/cuda_backend.h"
#include "bench/gelu_variants.h"
#include "runtime/device_runtime.h"
#include "stream/stream.h"
#include "stream/tensor_node.h"

namespace sf = streamfuse;
using sf::bench::GeluVariant;

namespace {

const sf::Device kGpu = sf::Device::cuda(0);
const sf::Shape kShape{32, 512, 2048};
constexpr std::int64_t kNumel = 32 * 512 * 2048;
constexpr double kBytes = 2.0 * kNumel * sizeof(float);

// The device, or why there is none.
std::string gpu_missing() {
  try {
    sf::synchronize(kGpu);
    return {};
  } catch (const sf::Error& e) {
    return e.what();
  }
}

const sf::Tensor& input() {
  static const sf::Tensor x = [] {
    sf::manual_seed(0);
    sf::Tensor t = sf::randn(kShape, sf::kF32, kGpu);
    sf::synchronize(kGpu);
    return t;
  }();
  return x;
}

// Events around work queued on this thread's CUDA stream.
class EventTimer {
 public:
  EventTimer()
      : rt_(sf::runtime::DeviceRuntime::get(kGpu)),
        gpu_(dynamic_cast<sf::backends::cuda::CudaBackend&>(rt_.backend())),
        d_(gpu_.context()->driver()) {
    gpu_.context()->make_current();
    d_.check(d_.event_create(&start_, CU_EVENT_DEFAULT), "event");
    d_.check(d_.event_create(&stop_, CU_EVENT_DEFAULT), "event");
  }
  ~EventTimer() {
    d_.event_destroy(start_);
    d_.event_destroy(stop_);
  }
  CUstream stream() { return gpu_.streams().get(rt_.streams().current()->id()); }
  void start() { d_.check(d_.event_record(start_, stream()), "record"); }
  // Runs what the stream has queued, then returns the seconds between start() and its end.
  double stop() {
    rt_.streams().current()->drain();
    d_.check(d_.event_record(stop_, stream()), "record");
    d_.check(d_.event_synchronize(stop_), "synchronize");
    float ms = 0;
    d_.check(d_.event_elapsed_time(&ms, start_, stop_), "elapsed");
    return ms / 1e3;
  }
  const sf::backends::cuda::Driver& driver() const { return d_; }

 private:
  sf::runtime::DeviceRuntime& rt_;
  sf::backends::cuda::CudaBackend& gpu_;
  const sf::backends::cuda::Driver& d_;
  CUevent start_ = nullptr, stop_ = nullptr;
};

// args: variant, fusion on.
void BM_GpuGelu(benchmark::State& state) {
  if (const std::string why = gpu_missing(); !why.empty()) return state.SkipWithError(why.c_str());
  const auto variant = static_cast<GeluVariant>(state.range(0));
  sf::Config c = sf::config();
  c.fusion = state.range(1) != 0;
  sf::set_config(c);
  const sf::Tensor& x = input();
  for (int warm_up = 0; warm_up < 3; ++warm_up) {  // plans explored, kernels compiled
    sf::Tensor warm = sf::bench::gelu(x, variant);
    sf::synchronize(kGpu);
  }
  EventTimer timer;
  for (auto _ : state) {
    timer.start();
    sf::Tensor y = sf::bench::gelu(x, variant);
    state.SetIterationTime(timer.stop());
    benchmark::DoNotOptimize(y);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kBytes));
  state.SetLabel(std::string(sf::bench::variant_name(variant)) +
                 (state.range(1) ? "/fused" : "/unfused"));
}

// cuMemcpyDtoDAsync of the same bytes on the same stream: what a single-pass kernel can reach.
void BM_GpuDeviceToDeviceCopy(benchmark::State& state) {
  if (const std::string why = gpu_missing(); !why.empty()) return state.SkipWithError(why.c_str());
  sf::Tensor dst = sf::zeros(kShape, sf::kF32, kGpu);
  sf::synchronize(kGpu);
  auto& rt = sf::runtime::DeviceRuntime::get(kGpu);
  sf::core::Failure failure;
  const auto from = rt.handles().get(input().node()->id, &failure);
  const auto to = rt.handles().get(dst.node()->id, &failure);
  EventTimer timer;
  for (auto _ : state) {
    timer.start();
    timer.driver().check(
        timer.driver().memcpy_dtod_async(sf::backends::cuda::device_address(to.storage.data()),
                                         sf::backends::cuda::device_address(from.storage.data()),
                                         kNumel * sizeof(float), timer.stream()),
        "copy");
    state.SetIterationTime(timer.stop());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kBytes));
}

}  // namespace

BENCHMARK(BM_GpuDeviceToDeviceCopy)->Unit(benchmark::kMicrosecond)->UseManualTime();
BENCHMARK(BM_GpuGelu)
    ->ArgsProduct({{0, 1, 2}, {0, 1}})
    ->Unit(benchmark::kMicrosecond)
    ->UseManualTime();
BENCHMARK_MAIN();
