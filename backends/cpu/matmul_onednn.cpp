// Float matrix products through oneDNN. For each (dtype, layout, thread count) a plan is chosen
// once and cached: the oneDNN primitive, and which operands it needs copied first.
//
// Choosing a plan: oneDNN takes explicit strides, so the operands are first described as they
// are. oneDNN rejects negative strides and falls back to its reference implementation ("ref:any",
// a naive loop) for layouts its GEMM kernels can't read (a zero or non-unit stride in both matrix
// dimensions); then the operands that are not a row- or column-major matrix are copied to dense
// row-major buffers, then both. An f16 or bf16 product the CPU has no kernel for converts its
// operands to dense f32 and its result back (round to nearest even).
#include <algorithm>
#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include <boost/container_hash/hash.hpp>
#include <oneapi/dnnl/dnnl.hpp>

#include "backends/cpu/kernels/parallel.h"
#include "backends/cpu/matmul_layout.h"
#include "backends/cpu/onednn_support.h"
#include "core/float16.h"
#include "core/log.h"
#include "streamfuse/error.h"

namespace streamfuse::backends::cpu {
namespace {

using dnnl::memory;

bool has_negative_stride(const MatrixLayout& x, int batch_rank) {
  for (int d = 0; d < batch_rank; ++d)
    if (x.batch_strides[static_cast<std::size_t>(d)] < 0) return true;
  return x.row_stride < 0 || x.col_stride < 0;
}

// Row- or column-major matrices (any leading dimension) that oneDNN's GEMM kernels read as is.
bool is_plain(const MatrixLayout& x, int batch_rank) {
  if (has_negative_stride(x, batch_rank)) return false;
  for (int i = 0; i < batch_rank; ++i) {
    const auto u = static_cast<std::size_t>(i);
    if (x.batch[u] > 1 && x.batch_strides[u] == 0) return false;
  }
  const bool row_major = (x.col_stride == 1 || x.cols == 1) && x.row_stride >= x.cols;
  const bool col_major = (x.row_stride == 1 || x.rows == 1) && x.col_stride >= x.rows;
  return row_major || col_major;
}

// `x` stored densely in row-major order, its broadcast batch dimensions kept at size 1.
MatrixLayout dense(const MatrixLayout& x, int batch_rank) {
  MatrixLayout d = x;
  d.col_stride = 1;
  d.row_stride = x.cols;
  std::int64_t stride = x.rows * x.cols;
  for (int i = batch_rank - 1; i >= 0; --i) {
    const auto u = static_cast<std::size_t>(i);
    d.batch_strides[u] = x.batch[u] == 1 ? 0 : stride;
    stride *= x.batch[u];
  }
  return d;
}

bool same_layout(const MatrixLayout& x, const MatrixLayout& y, int batch_rank) {
  if (x.row_stride != y.row_stride && x.rows > 1) return false;
  if (x.col_stride != y.col_stride && x.cols > 1) return false;
  for (int i = 0; i < batch_rank; ++i) {
    const auto u = static_cast<std::size_t>(i);
    if (x.batch[u] > 1 && x.batch_strides[u] != y.batch_strides[u]) return false;
  }
  return true;
}

// oneDNN's descriptor of `x`. Strides of size-1 dimensions don't address anything, but oneDNN's
// kernels check them when matching layouts: they are set so that a strided row or column reads
// as a row-major (or column-major) matrix with a leading dimension.
memory::desc matrix_desc(const MatrixLayout& x, int batch_rank, memory::data_type type) {
  memory::dims dims, strides;
  for (int i = 0; i < batch_rank; ++i) dims.push_back(x.batch[static_cast<std::size_t>(i)]);
  dims.push_back(x.rows);
  dims.push_back(x.cols);
  std::int64_t rs = x.row_stride, cs = x.col_stride;
  if (x.cols == 1) cs = 1;
  if (x.rows == 1) rs = cs == 1 ? x.cols : 1;
  std::int64_t span = std::max(rs * x.rows, cs * x.cols);
  strides.resize(dims.size());
  strides[dims.size() - 2] = rs;
  strides[dims.size() - 1] = cs;
  for (int i = batch_rank - 1; i >= 0; --i) {
    const auto u = static_cast<std::size_t>(i);
    strides[u] = x.batch[u] == 1 ? span : x.batch_strides[u];
    span = std::max(span, strides[u] * x.batch[u]);
  }
  return memory::desc(dims, type, strides);
}

// What the product does for one key: copy (and maybe convert) operands, run the primitive,
// convert the result back when `compute` is not the dtype.
struct Plan {
  DType compute = kF32;
  bool copy_a = false, copy_b = false;  // to dense row-major buffers of `compute`
  dnnl::matmul primitive;
  memory::desc a_md, b_md, c_md, scratchpad_md;
  // Each post-op's operand; empty when the primitive applies none (it then stores the product
  // alone, even where the key has post-ops).
  std::vector<memory::desc> post_op_mds;
  std::string impl;
};

// Whether a plan's post-ops give the bits of the product stored and then the steps run one by
// one. The brgemm kernels ("brg:...") keep the same blocking with post-ops and apply them to the
// finished f32 accumulators. oneDNN's GEMM driver ("gemm:jit") does not: with a binary post-op
// it takes another path whose sums differ in the last bits (seen on AVX2, a batch of 3x8x8
// products, ONEDNN_MAX_CPU_ISA=AVX2), so its products are stored alone and the steps run after.
bool applies_post_ops_exactly(const Plan& plan) { return plan.impl.rfind("brg:", 0) == 0; }

// The words that tell plans apart; only the first `used` are set. Hashed and compared over
// those alone: the whole array is some hundred words, and a small product's run looked its plan
// up in about as long as the product took.
struct PlanKey {
  std::array<std::int64_t, 7 + 6 * kMaxRank + kMaxProductPostOps*(3 + kMaxRank)> words{};
  std::size_t used = 0;
  friend bool operator==(const PlanKey& a, const PlanKey& b) {
    return a.used == b.used &&
           std::equal(a.words.begin(), a.words.begin() + static_cast<std::ptrdiff_t>(a.used),
                      b.words.begin());
  }
};

struct PlanKeyHash {
  std::size_t operator()(const PlanKey& k) const {
    return boost::hash_range(k.words.begin(),
                             k.words.begin() + static_cast<std::ptrdiff_t>(k.used));
  }
};

PlanKey make_key(DType dtype, const MatmulLayout& l, int threads,
                 std::span<const ProductPostOp> post_ops) {
  PlanKey key;
  std::size_t w = 0;
  auto put = [&](std::int64_t v) { key.words[w++] = v; };
  put(static_cast<std::int64_t>(dtype));
  put(threads);
  put(l.batch_rank);
  put(l.m);
  put(l.k);
  put(l.n);
  for (const MatrixLayout* x : {&l.a, &l.b}) {
    put(x->row_stride);
    put(x->col_stride);
    for (int i = 0; i < l.batch_rank; ++i) {
      put(x->batch[static_cast<std::size_t>(i)]);
      put(x->batch_strides[static_cast<std::size_t>(i)]);
    }
  }
  for (int i = 0; i < l.batch_rank; ++i) put(l.batch[static_cast<std::size_t>(i)]);
  put(static_cast<std::int64_t>(post_ops.size()));
  for (const ProductPostOp& p : post_ops) {
    put(static_cast<std::int64_t>(p.kind));
    for (int i = 0; i < l.batch_rank + 2; ++i) put(p.strides[static_cast<std::size_t>(i)]);
  }
  key.used = w;
  return key;
}

dnnl::algorithm post_op_algorithm(core::OpKind kind) {
  switch (kind) {
    case core::OpKind::kAdd:
      return dnnl::algorithm::binary_add;
    case core::OpKind::kSub:
      return dnnl::algorithm::binary_sub;
    case core::OpKind::kMul:
      return dnnl::algorithm::binary_mul;
    case core::OpKind::kDiv:
      return dnnl::algorithm::binary_div;
    default:
      throw Error("matmul: " + std::string(core::op_name(kind)) + " is not a product post-op");
  }
}

// oneDNN's descriptor of a post-op's operand over the product's dimensions (batch..., m, n):
// size 1 where it broadcasts. A size-1 dimension's stride addresses nothing; it is set as a dense
// layout's would be, which oneDNN's broadcast detection expects.
memory::desc post_op_desc(const MatmulLayout& l, const ProductPostOp& p) {
  const int rank = l.batch_rank + 2;
  memory::dims dims(static_cast<std::size_t>(rank)), strides(static_cast<std::size_t>(rank));
  for (int d = 0; d < rank; ++d) {
    const auto u = static_cast<std::size_t>(d);
    const std::int64_t size = d < l.batch_rank ? l.batch[u] : d == l.batch_rank ? l.m : l.n;
    dims[u] = p.strides[u] == 0 ? 1 : size;
  }
  std::int64_t dense = 1;
  for (int d = rank - 1; d >= 0; --d) {
    const auto u = static_cast<std::size_t>(d);
    strides[u] = dims[u] == 1 ? dense : p.strides[u];
    dense = std::max(dense, strides[u] * dims[u]);
  }
  return memory::desc(dims, memory::data_type::f32, strides);
}

std::string describe_plan(DType dtype, const MatmulLayout& l, const Plan& p) {
  std::string s = "matmul plan for " + std::string(dtype_name(dtype)) +
                  " m=" + std::to_string(l.m) + " k=" + std::to_string(l.k) +
                  " n=" + std::to_string(l.n) + " batch=" + std::to_string(l.batch_count()) + ": " +
                  p.impl;
  if (!p.post_op_mds.empty()) s += ", " + std::to_string(p.post_op_mds.size()) + " post-op(s)";
  if (p.compute != dtype) s += ", via f32";
  if (p.copy_a) s += ", copies a";
  if (p.copy_b) s += ", copies b";
  return s;
}

}  // namespace

struct OnednnMatmul::State {
  State() { configure_onednn_jit_profiling(); }

  using Found = PlanCache<PlanKey, PlanKeyHash, Plan>::Found;

  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  PlanCache<PlanKey, PlanKeyHash, Plan> plans{kMaxCachedPrimitives};

  // A plan with this primitive, or nullptr where oneDNN has no kernel better than its reference
  // loop (and `accept_reference` is false). Throws dnnl::error when oneDNN rejects the layout.
  std::shared_ptr<Plan> try_plan(DType compute, const MatmulLayout& l, bool copy_a, bool copy_b,
                                 bool accept_reference,
                                 std::span<const ProductPostOp> post_ops = {}) {
    auto plan = std::make_shared<Plan>();
    plan->compute = compute;
    plan->copy_a = copy_a;
    plan->copy_b = copy_b;
    MatrixLayout c;
    c.batch = l.batch;
    c.rows = l.m;
    c.cols = l.n;
    const int r = l.batch_rank;
    const memory::data_type type = dnnl_type(compute);
    plan->a_md = matrix_desc(copy_a ? dense(l.a, r) : l.a, r, type);
    plan->b_md = matrix_desc(copy_b ? dense(l.b, r) : l.b, r, type);
    plan->c_md = matrix_desc(dense(c, r), r, type);
    dnnl::primitive_attr attr;
    // The scratchpad comes with each call: oneDNN's own one is per creating thread, and cached
    // primitives run on other threads.
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (!post_ops.empty()) {
      dnnl::post_ops ops;
      for (const ProductPostOp& p : post_ops) {
        plan->post_op_mds.push_back(post_op_desc(l, p));
        ops.append_binary(post_op_algorithm(p.kind), plan->post_op_mds.back());
      }
      attr.set_post_ops(ops);
    }
    const dnnl::matmul::desc desc(plan->a_md, plan->b_md, plan->c_md);
    const dnnl::matmul::primitive_desc pd(desc, attr, engine);
    plan->impl = pd.impl_info_str();
    if (!accept_reference && plan->impl.rfind("ref", 0) == 0) return nullptr;
    plan->scratchpad_md = pd.scratchpad_desc();
    plan->primitive = dnnl::matmul(pd);
    return plan;
  }

  // With post-ops: a plan that applies them, where oneDNN has a kernel better than its reference
  // loop for them and this layout as is or with operands copied; else the plan without them.
  std::shared_ptr<const Plan> build(DType dtype, const MatmulLayout& l,
                                    std::span<const ProductPostOp> post_ops) {
    const int r = l.batch_rank;
    const bool neg_a = has_negative_stride(l.a, r), neg_b = has_negative_stride(l.b, r);
    const bool dense_a = same_layout(l.a, dense(l.a, r), r);
    const bool dense_b = same_layout(l.b, dense(l.b, r), r);
    const std::array<std::array<bool, 2>, 3> copies{{
        {neg_a, neg_b},
        {!is_plain(l.a, r), !is_plain(l.b, r)},
        {!dense_a, !dense_b},
    }};
    for (std::size_t i = 0; i < copies.size(); ++i) {
      if (i > 0 && copies[i] == copies[i - 1]) continue;
      if (!post_ops.empty() && dtype == kF32) {
        try {
          auto plan = try_plan(dtype, l, copies[i][0], copies[i][1], false, post_ops);
          if (plan && applies_post_ops_exactly(*plan)) return plan;
        } catch (const dnnl::error&) {
          // no kernel takes these post-ops here: try without them
        }
      }
      try {
        if (auto plan = try_plan(dtype, l, copies[i][0], copies[i][1], false)) return plan;
      } catch (const dnnl::error&) {
        // unimplemented for this dtype or layout: the next plan copies more
      }
    }
    if (dtype != kF32) return try_plan(kF32, l, true, true, true);
    return try_plan(kF32, l, !dense_a, !dense_b, true);
  }

  // The plan for (dtype, l) at the calling thread's OpenMP thread count (set by ScopedThreads).
  Found find_plan(DType dtype, const MatmulLayout& l, int num_threads, bool for_run,
                  std::span<const ProductPostOp> post_ops = {}) {
    const PlanKey key = make_key(dtype, l, max_threads(num_threads), post_ops);
    return plans.find_or_build(key, for_run, [&] {
      std::shared_ptr<const Plan> plan = build(dtype, l, post_ops);
      if (core::log_enabled(core::LogChannel::kCache))
        core::log_line(core::LogChannel::kCache,
                       std::string(for_run ? "" : "prepared ") + describe_plan(dtype, l, *plan));
      return plan;
    });
  }
};

namespace {

// An operand element as the primitive reads it: itself, or widened to f32.
template <class To, class From>
To convert(From x) {
  if constexpr (std::is_same_v<From, To>)
    return x;
  else if constexpr (std::is_same_v<From, Half>)
    return core::half_bits_to_float(x.bits);
  else
    return core::bf16_bits_to_float(x.bits);
}

// Rows [begin, end) of the dense row-major copy of `x` (row r is row r % rows of matrix
// r / rows, counted over x's own batch sizes).
template <class From, class To>
void copy_rows(const MatmulLayout& l, const MatrixLayout& x, const From* src, To* dst,
               std::int64_t begin, std::int64_t end) {
  for (std::int64_t r = begin; r < end; ++r) {
    std::int64_t matrix = r / x.rows, offset = (r % x.rows) * x.row_stride;
    for (int i = l.batch_rank - 1; i >= 0; --i) {
      const auto u = static_cast<std::size_t>(i);
      offset += (matrix % x.batch[u]) * x.batch_strides[u];
      matrix /= x.batch[u];
    }
    const From* row = src + offset;
    To* out = dst + r * x.cols;
    if (x.col_stride == 1) {  // the common case, kept apart so that it vectorizes
      for (std::int64_t c = 0; c < x.cols; ++c) out[c] = convert<To>(row[c]);
    } else {
      for (std::int64_t c = 0; c < x.cols; ++c) out[c] = convert<To>(row[c * x.col_stride]);
    }
  }
}

// Copies operand `x` (of From elements) into a dense row-major buffer of To elements.
template <class From, class To>
void copy_dense(const MatmulLayout& l, const MatrixLayout& x, const void* src, void* dst,
                int num_threads) {
  const std::int64_t rows = x.matrices(l.batch_rank) * x.rows;
  const std::int64_t grain = std::max<std::int64_t>(1, 16384 / x.cols);
  parallel_for(rows, grain, num_threads, [&](std::int64_t begin, std::int64_t end) {
    copy_rows(l, x, static_cast<const From*>(src), static_cast<To*>(dst), begin, end);
  });
}

void copy_operand(DType dtype, DType compute, const MatmulLayout& l, const MatrixLayout& x,
                  const void* src, void* dst, int num_threads) {
  switch (dtype) {
    case kF16:
      if (compute == kF32) return copy_dense<Half, float>(l, x, src, dst, num_threads);
      return copy_dense<Half, Half>(l, x, src, dst, num_threads);
    case kBF16:
      if (compute == kF32) return copy_dense<BFloat16, float>(l, x, src, dst, num_threads);
      return copy_dense<BFloat16, BFloat16>(l, x, src, dst, num_threads);
    default:
      return copy_dense<float, float>(l, x, src, dst, num_threads);
  }
}

// oneDNN's f32 GEMM driver ("gemm:jit": batched products with strided operands, such as
// attention's q @ k^T over views of one qkv projection) generates its kernels the first time a
// product of any shape runs through it, not when a primitive is made: 20-25 ms on one core,
// measured with ONEDNN_VERBOSE as the first run of a 12-head attention product taking 19-25 ms
// against 0.1-1 ms after. Preparing a plan that uses the driver runs one small product through
// it, so that a process with a warm cache pays this while it starts, not in its first
// iteration. Of the sizes tried, 64x64x64 generated them and 1x1x1 did not (it takes another
// path); one thread, as the kernels do not depend on the count. It holds no core::BusyCore:
// products run beside it on fewer threads would need primitives made for that count, more code
// generation than the 21 ms of sharing a core costs.
std::atomic<bool> g_gemm_driver_ready{false};

bool uses_gemm_driver(const Plan& plan) { return plan.compute == kF32 && plan.impl == "gemm:jit"; }

void warm_gemm_driver() {
  static std::once_flag once;
  std::call_once(once, [] {
    constexpr int kSide = 64;
    std::vector<float> a(kSide * kSide, 1.0f), b(kSide * kSide, 1.0f), c(kSide * kSide);
    ScopedThreads one(1);
    if (dnnl_sgemm('N', 'N', kSide, kSide, kSide, 1.0f, a.data(), kSide, b.data(), kSide, 0.0f,
                   c.data(), kSide) != dnnl_success)
      core::warn_once("gemm-warm-up",
                      "oneDNN's GEMM driver failed to run a product ahead of need; "
                      "its kernels are generated when it first runs");
    else
      g_gemm_driver_ready.store(true, std::memory_order_relaxed);
  });
}

AlignedBuffer allocate(std::int64_t elements, DType dtype) {
  return allocate_aligned(static_cast<std::size_t>(elements) * element_size(dtype));
}

// What a run of a plan needs besides its buffers: the primitive's memory objects, its argument
// map and a stream. Made once per thread and plan, and pointed at each run's buffers
// (set_data_handle): made at every run they cost more than a small product itself (a 4x32 by
// 32x32 product: 1.3 us of memory objects, map nodes and stream against 0.7 us of product).
struct RunState {
  dnnl::engine engine;               // first: outlives the objects made on it
  std::shared_ptr<const Plan> plan;  // held, so that no other plan takes its address meanwhile
  dnnl::stream stream;               // streams are not thread-safe: one per thread
  memory a, b, c, scratchpad;
  std::vector<memory> post_srcs;  // the post-ops' second operands
  std::unordered_map<int, memory> args;
};

RunState make_run_state(const std::shared_ptr<const Plan>& plan, const dnnl::engine& engine,
                        std::size_t num_post) {
  void* const none = DNNL_MEMORY_NONE;  // a buffer each run sets
  RunState s;
  s.engine = engine;
  s.plan = plan;
  s.stream = dnnl::stream(engine);
  s.a = memory(plan->a_md, engine, none);
  s.b = memory(plan->b_md, engine, none);
  s.c = memory(plan->c_md, engine, none);
  s.scratchpad = memory(plan->scratchpad_md, engine, none);
  s.args = {{DNNL_ARG_SRC, s.a},
            {DNNL_ARG_WEIGHTS, s.b},
            {DNNL_ARG_DST, s.c},
            {DNNL_ARG_SCRATCHPAD, s.scratchpad}};
  for (std::size_t i = 0; i < num_post; ++i) {
    s.post_srcs.emplace_back(plan->post_op_mds[i], engine, none);
    s.args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(static_cast<int>(i)) | DNNL_ARG_SRC_1,
                   s.post_srcs.back());
  }
  return s;
}

// A thread's run states, the most recently used first; a few kept (a model's products take a
// handful of shapes in turn).
struct RunStates {
  static constexpr std::size_t kKept = 32;
  std::vector<std::unique_ptr<RunState>> list;
  ~RunStates();
};
// Set once the thread's RunStates is destroyed: a stream drained while the thread's other
// thread-locals are destroyed (at exit) may still run products. Trivially destructible, so it
// can be read then.
thread_local bool t_run_states_gone = false;
RunStates::~RunStates() { t_run_states_gone = true; }

// The calling thread's state for `plan` with `num_post` post-op operands; after the thread's
// states are gone, `spare`, made for this run.
RunState& run_state(const std::shared_ptr<const Plan>& plan, const dnnl::engine& engine,
                    std::size_t num_post, std::optional<RunState>& spare) {
  if (t_run_states_gone) return spare.emplace(make_run_state(plan, engine, num_post));
  thread_local RunStates states;
  auto& list = states.list;
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (list[i]->plan != plan || list[i]->post_srcs.size() != num_post) continue;
    std::rotate(list.begin(), list.begin() + static_cast<std::ptrdiff_t>(i),
                list.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    return *list.front();
  }
  if (list.size() == RunStates::kKept) list.pop_back();
  list.insert(list.begin(), std::make_unique<RunState>(make_run_state(plan, engine, num_post)));
  return *list.front();
}

}  // namespace

OnednnMatmul::OnednnMatmul() : state_(std::make_unique<State>()) {}
OnednnMatmul::~OnednnMatmul() = default;

std::size_t OnednnMatmul::cached_primitives() const { return state_->plans.size(); }

bool OnednnMatmul::gemm_driver_ready() {
  return g_gemm_driver_ready.load(std::memory_order_relaxed);
}

void OnednnMatmul::prepare(DType dtype, const MatmulLayout& layout, int num_threads,
                           std::span<const ProductPostOp> post_ops) {
  ScopedThreads threads(num_threads);
  const State::Found found = state_->find_plan(dtype, layout, num_threads, false, post_ops);
  make_scratchpad_ahead(found.plan->scratchpad_md.get_size());
  if (uses_gemm_driver(*found.plan)) warm_gemm_driver();
}

bool OnednnMatmul::run(DType dtype, const MatmulLayout& l, const void* a, const void* b, void* out,
                       int num_threads, std::span<const ProductPostOp> post_ops, bool* applied) {
  ScopedThreads threads(num_threads);
  const State::Found found = state_->find_plan(dtype, l, num_threads, true, post_ops);
  const Plan* plan = found.plan.get();
  if (applied) *applied = !plan->post_op_mds.empty();

  AlignedBuffer a_copy, b_copy, c_f32;
  if (plan->copy_a) {
    a_copy = allocate(l.a.matrices(l.batch_rank) * l.m * l.k, plan->compute);
    copy_operand(dtype, plan->compute, l, l.a, a, a_copy.get(), num_threads);
    a = a_copy.get();
  }
  if (plan->copy_b) {
    b_copy = allocate(l.b.matrices(l.batch_rank) * l.k * l.n, plan->compute);
    copy_operand(dtype, plan->compute, l, l.b, b, b_copy.get(), num_threads);
    b = b_copy.get();
  }
  const std::int64_t numel = l.batch_count() * l.m * l.n;
  void* c = out;
  if (plan->compute != dtype) {
    c_f32 = allocate(numel, kF32);
    c = c_f32.get();
  }

  const std::size_t num_post = plan->post_op_mds.empty() ? 0 : post_ops.size();
  std::optional<RunState> spare;
  RunState& run = run_state(found.plan, state_->engine, num_post, spare);
  const Scratchpad pad(plan->scratchpad_md.get_size());
  run.a.set_data_handle(const_cast<void*>(a));
  run.b.set_data_handle(const_cast<void*>(b));
  run.c.set_data_handle(c);
  run.scratchpad.set_data_handle(pad.data());
  for (std::size_t i = 0; i < num_post; ++i)
    run.post_srcs[i].set_data_handle(const_cast<float*>(post_ops[i].data));
  plan->primitive.execute(run.stream, run.args);
  run.stream.wait();
  // Worth preparing in the next process: a primitive that generates code when it is made, or
  // the process's first product through the GEMM driver, for the driver's one-time generation.
  // The driver's own primitives take microseconds to make, and a decode loop makes one per
  // context length (attention's products); remembered, they would push the ones that matter out
  // of the bounded list of prepared ops (GPT-2 made 30 in 30 tokens).
  bool worth_preparing = true;
  if (uses_gemm_driver(*plan))
    worth_preparing = !g_gemm_driver_ready.exchange(true, std::memory_order_relaxed);
  if (plan->compute != dtype)
    round_f32_results(dtype, static_cast<const float*>(c), out, numel, num_threads);
  return found.first_use && worth_preparing;
}

}  // namespace streamfuse::backends::cpu
