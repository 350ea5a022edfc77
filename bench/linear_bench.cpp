// A linear layer's product alone (x [m, k] @ W, W stored [k, n] or as torch.nn.Linear stores it,
// [n, k]) in each of the two kernels the library chooses between for it on a CPU: its own one-b
// GEMM and oneDNN's primitive (on a CPU without AVX-512, oneDNN's GEMM driver). The label says
// which one the library takes for the shape on this CPU, so that the rows where the choice
// changes can be checked on any machine. Both run on every core.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backends/cpu/isa.h"
#include "backends/cpu/kernels/kernels.h"
#include "backends/cpu/matmul.h"
#include "backends/cpu/matmul_layout.h"
#include "backends/matmul_layout.h"
#include "streamfuse/streamfuse.h"

namespace {

namespace sf = streamfuse;
namespace cpu = streamfuse::backends::cpu;

struct Operands {
  std::vector<float> x, w, out;
  std::int64_t m, k, n;
  bool transposed;  // W stored [n, k]

  explicit Operands(const benchmark::State& state)
      : m(state.range(0)), k(state.range(1)), n(state.range(2)), transposed(state.range(3) != 0) {
    x = sf::randn({m, k}).to_vector<float>();
    w = sf::randn({k, n}).to_vector<float>();
    out.resize(static_cast<std::size_t>(m * n));
  }
  // W's element strides over [k, n].
  std::int64_t w_row_stride() const { return transposed ? 1 : n; }
  std::int64_t w_col_stride() const { return transposed ? k : 1; }
  sf::backends::MatmulOperand a() const { return {x.data(), sf::Shape{m, k}, {k, 1}}; }
  sf::backends::MatmulOperand b() const {
    return {w.data(), sf::Shape{k, n}, {w_row_stride(), w_col_stride()}};
  }
};

// The label says which kernel the library's engine takes for the product: the one-b GEMM makes no
// oneDNN primitive.
void finish(benchmark::State& state, Operands& o) {
  state.counters["flops"] = benchmark::Counter(static_cast<double>(2 * o.m * o.k * o.n),
                                               benchmark::Counter::kIsIterationInvariantRate);
  cpu::MatmulEngine engine;
  engine.run(sf::kF32, o.a(), o.b(), o.out.data(), sf::Shape{o.m, o.n}, 0);
  state.SetLabel(std::string(o.transposed ? "x @ W^T" : "x @ W") + ", the library takes " +
                 (engine.cached_primitives() == 0 ? "one-b" : "oneDNN"));
}

void BM_OneB(benchmark::State& state) {
  Operands o(state);
  const cpu::KernelTable* table = cpu::kernel_table_for(cpu::isa_level());
  if (!table) {
    state.SkipWithError("no kernel table for this CPU's ISA level");
    return;
  }
  cpu::RowProductArgs args;
  args.a = o.x.data();
  args.a_row_stride = o.k;
  args.b = o.w.data();
  args.b_row_stride = o.w_row_stride();
  args.b_col_stride = o.w_col_stride();
  args.m = o.m;
  args.k = o.k;
  args.n = o.n;
  args.out = o.out.data();
  args.num_threads = 0;
  for (auto _ : state) {
    table->gemm_one_b(args);
    benchmark::ClobberMemory();
  }
  finish(state, o);
}

void BM_Onednn(benchmark::State& state) {
  Operands o(state);
  const sf::backends::MatmulLayout layout =
      sf::backends::make_matmul_layout(o.a(), o.b(), sf::Shape{o.m, o.n});
  cpu::OnednnMatmul onednn;
  onednn.run(sf::kF32, layout, o.x.data(), o.w.data(), o.out.data(), 0);  // makes the primitive
  for (auto _ : state) {
    onednn.run(sf::kF32, layout, o.x.data(), o.w.data(), o.out.data(), 0);
    benchmark::ClobberMemory();
  }
  finish(state, o);
}

// GPT-2 small's linear layers (k x n: 768 x 2304, 768 x 768, 768 x 3072, 3072 x 768) at the rows
// of a short and a long prompt and of a batch of them, and around the rows where the library's
// choice changes on AVX2 (128 and 384).
void shapes(benchmark::internal::Benchmark* b) {
  const std::int64_t layers[][2] = {{768, 2304}, {768, 768}, {768, 3072}, {3072, 768}};
  for (std::int64_t rows : {8, 64, 128, 256, 384, 512, 1024})
    for (const auto& [k, n] : layers)
      for (std::int64_t transposed : {0, 1}) b->Args({rows, k, n, transposed});
}

BENCHMARK(BM_OneB)->Apply(shapes)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Onednn)->Apply(shapes)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
