// ConvEngine: oneDNN convolution_forward primitives. The tensors are stored plainly (nchw source
// and result, oihw / goihw weights); on those layouts oneDNN has only its GEMM-based kernels, so
// unless the convolution is a 1x1 product the plan asks for oneDNN's preferred (blocked) layouts
// and reorders the source and weights into them and the result back, each call: its direct
// kernels win that back several times over. f16 / bf16 run natively where oneDNN has a kernel
// better than its reference loop for this CPU, else through dense f32 copies (the matmul's rule).
#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include <boost/container_hash/hash.hpp>
#include <oneapi/dnnl/dnnl.hpp>

#include "backends/cpu/conv.h"
#include "backends/cpu/kernels/parallel.h"
#include "backends/cpu/onednn_support.h"
#include "core/float16.h"
#include "core/log.h"
#include "streamfuse/error.h"

namespace streamfuse::backends::cpu {
namespace {

using dnnl::memory;

// A layout the primitive reads or writes other than the tensor's own: reordered into a buffer of
// `md` before the run (x, w) or out of it after (out).
struct Reorder {
  memory::desc md;
  dnnl::reorder primitive;
  explicit operator bool() const { return static_cast<bool>(primitive); }
};

struct Plan {
  DType compute = kF32;  // the problem's dtype, or f32 through copies
  dnnl::convolution_forward primitive;
  memory::desc x_md, w_md, out_md, scratchpad_md;  // the tensors' own (plain) layouts
  Reorder x_in, w_in, out_back;                    // where the primitive wants others
  std::string impl;
};

struct PlanKey {
  std::array<std::int64_t, 20> words{};
  friend bool operator==(const PlanKey&, const PlanKey&) = default;
};

struct PlanKeyHash {
  std::size_t operator()(const PlanKey& k) const {
    return boost::hash_range(k.words.begin(), k.words.end());
  }
};

PlanKey make_key(const ConvProblem& p, int threads) {
  PlanKey key;
  std::size_t i = 0;
  auto put = [&](std::int64_t v) { key.words[i++] = v; };
  put(static_cast<std::int64_t>(p.dtype));
  put(threads);
  for (const Shape* s : {&p.x, &p.w})
    for (std::int64_t d : *s) put(d);
  const core::Window& w = p.window;
  for (const auto* v : {&w.stride, &w.padding, &w.dilation}) {
    put((*v)[0]);
    put((*v)[1]);
  }
  put(w.groups);
  return key;
}

std::string describe(const ConvProblem& p) {
  core::OpDesc op;
  op.kind = core::OpKind::kConv2d;
  op.inputs.resize(2);
  op.inputs[0].shape = p.x;
  op.inputs[1].shape = p.w;
  op.outputs.resize(1);
  op.outputs[0].shape = p.out;
  for (auto* t : {&op.inputs[0], &op.inputs[1], &op.outputs[0]}) t->dtype = p.dtype;
  op.attrs.window = p.window;
  return core::to_string(op);
}

// Throws ShapeError unless `p` is a well-formed convolution (its shapes may come from a file).
void check(const ConvProblem& p) {
  if (p.dtype != kF32 && p.dtype != kF16 && p.dtype != kBF16)
    throw DTypeError(describe(p) + ": convolutions take f32, f16 or bf16");
  std::string why;
  const std::optional<Shape> out =
      core::window_result_shape(core::OpKind::kConv2d, p.x, p.w, p.window, why);
  if (!out) throw ShapeError(describe(p) + ": " + why);
  if (*out != p.out)
    throw ShapeError(describe(p) + ": the result of these shapes is " + out->to_string());
}

// The plan for `p` computed in `compute`, or nullptr where oneDNN has nothing better than its
// reference loop (and `accept_reference` is false). Throws dnnl::error when oneDNN rejects it.
std::shared_ptr<Plan> try_plan(const dnnl::engine& engine, const ConvProblem& p, DType compute,
                               bool accept_reference, bool blocked) {
  auto plan = std::make_shared<Plan>();
  plan->compute = compute;
  const memory::data_type type = dnnl_type(compute);
  const core::Window& win = p.window;
  const std::int64_t g = win.groups;
  plan->x_md = memory::desc({p.x[0], p.x[1], p.x[2], p.x[3]}, type, memory::format_tag::nchw);
  plan->out_md =
      memory::desc({p.out[0], p.out[1], p.out[2], p.out[3]}, type, memory::format_tag::nchw);
  plan->w_md =
      g == 1
          ? memory::desc({p.w[0], p.w[1], p.w[2], p.w[3]}, type, memory::format_tag::oihw)
          : memory::desc({g, p.w[0] / g, p.w[1], p.w[2], p.w[3]}, type, memory::format_tag::goihw);
  memory::dims strides{win.stride[0], win.stride[1]};
  memory::dims dilates{win.dilation[0] - 1, win.dilation[1] - 1};  // oneDNN counts the gaps
  memory::dims pad_l{win.padding[0], win.padding[1]}, pad_r(2);
  // The right padding that makes oneDNN's size rule give out's size (less than the left one
  // where floor drops a last partial window).
  for (std::size_t i = 0; i < 2; ++i)
    pad_r[i] = (p.out[2 + static_cast<int>(i)] - 1) * strides[i] +
               (p.w[2 + static_cast<int>(i)] - 1) * win.dilation[i] + 1 -
               p.x[2 + static_cast<int>(i)] - pad_l[i];
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  // blocked: the layouts oneDNN prefers (format `any`), the tensors reordered to and from them.
  auto any = [](const memory::desc& md) {
    return memory::desc(md.dims(), md.data_type(), memory::format_tag::any);
  };
  const dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
      blocked ? any(plan->x_md) : plan->x_md, blocked ? any(plan->w_md) : plan->w_md,
      blocked ? any(plan->out_md) : plan->out_md, strides, dilates, pad_l, pad_r);
  const dnnl::convolution_forward::primitive_desc pd(desc, attr, engine);
  plan->impl = pd.impl_info_str();
  if (!accept_reference && plan->impl.rfind("ref", 0) == 0) return nullptr;
  plan->scratchpad_md = pd.scratchpad_desc();
  plan->primitive = dnnl::convolution_forward(pd);
  auto reorder = [&](const memory::desc& from, const memory::desc& to) {
    Reorder r;
    if (from == to) return r;
    r.md = to;  // the buffer's layout for x and w; out's is set below
    r.primitive = dnnl::reorder(dnnl::reorder::primitive_desc(engine, from, engine, to));
    return r;
  };
  plan->x_in = reorder(plan->x_md, pd.src_desc());
  plan->w_in = reorder(plan->w_md, pd.weights_desc());
  plan->out_back = reorder(pd.dst_desc(), plan->out_md);
  if (plan->out_back) plan->out_back.md = pd.dst_desc();
  if (plan->x_in || plan->w_in || plan->out_back) plan->impl += " (blocked layouts)";
  return plan;
}

// Whether an implementation is oneDNN's GEMM-based convolution (im2col and a matrix product),
// which is what plain layouts get: slower than the direct kernels on blocked layouts even with
// the reorders, by 4x for a depthwise convolution and 1.2x for a 3x3 one (bench/conv_bench).
bool gemm_based(const std::string& impl) { return impl.find("gemm") != std::string::npos; }

// The plan on the tensors' own layouts, unless oneDNN has only its GEMM-based kernel there and
// a direct one on blocked layouts (then that one, with reorders).
std::shared_ptr<Plan> best_plan(const dnnl::engine& engine, const ConvProblem& p, DType compute,
                                bool accept_reference) {
  std::shared_ptr<Plan> plain = try_plan(engine, p, compute, accept_reference, false);
  // A 1x1 convolution of one group is a matrix product: GEMM is the right kernel, and the
  // reorders would only add passes (0.65 ms against 0.92 for a [8, 64, 56, 56] projection).
  const bool product = p.w[2] == 1 && p.w[3] == 1 && p.window.groups == 1;
  if (plain && (product || !gemm_based(plain->impl))) return plain;
  try {
    std::shared_ptr<Plan> blocked = try_plan(engine, p, compute, false, true);
    if (blocked && !gemm_based(blocked->impl)) return blocked;
  } catch (const dnnl::error&) {
    // no blocked kernel for this problem
  }
  return plain;
}

std::shared_ptr<const Plan> build(const dnnl::engine& engine, const ConvProblem& p) {
  if (p.dtype != kF32) {
    try {
      if (auto plan = best_plan(engine, p, p.dtype, false)) return plan;
    } catch (const dnnl::error&) {
      // no f16 / bf16 kernel on this CPU: through f32
    }
  }
  return best_plan(engine, p, kF32, true);
}

AlignedBuffer allocate_f32(std::int64_t elements) {
  return allocate_aligned(static_cast<std::size_t>(elements) * sizeof(float));
}

// `n` f16 / bf16 elements widened to f32.
AlignedBuffer widen(DType dtype, const void* src, std::int64_t n, int num_threads) {
  AlignedBuffer out = allocate_f32(n);
  auto* d = static_cast<float*>(out.get());
  const auto* s = static_cast<const std::uint16_t*>(src);
  parallel_for(n, 16384, num_threads, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i)
      d[i] = dtype == kF16 ? core::half_bits_to_float(s[i]) : core::bf16_bits_to_float(s[i]);
  });
  return out;
}

}  // namespace

struct ConvEngine::State {
  State() { configure_onednn_jit_profiling(); }

  using Found = PlanCache<PlanKey, PlanKeyHash, Plan>::Found;

  Found find_plan(const ConvProblem& p, int num_threads, bool for_run) {
    return plans.find_or_build(make_key(p, max_threads(num_threads)), for_run, [&] {
      std::shared_ptr<const Plan> plan = build(engine, p);
      if (core::log_enabled(core::LogChannel::kCache))
        core::log_line(core::LogChannel::kCache,
                       std::string(for_run ? "" : "prepared ") + "conv2d plan for " + describe(p) +
                           ": " + plan->impl + (plan->compute != p.dtype ? ", via f32" : ""));
      return plan;
    });
  }

  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  PlanCache<PlanKey, PlanKeyHash, Plan> plans{kMaxCachedPrimitives};
};

ConvEngine::ConvEngine() : state_(std::make_unique<State>()) {}
ConvEngine::~ConvEngine() = default;

std::size_t ConvEngine::cached_primitives() const { return state_->plans.size(); }

bool ConvEngine::prepare(const ConvProblem& p, int num_threads) {
  check(p);
  if (p.out.numel() == 0 || p.w.numel() == 0) return false;
  ScopedThreads threads(num_threads);
  try {
    make_scratchpad_ahead(state_->find_plan(p, num_threads, false).plan->scratchpad_md.get_size());
  } catch (const dnnl::error& e) {
    throw Error(describe(p) + " could not be prepared in oneDNN: " + e.what() + " (status " +
                std::to_string(static_cast<int>(e.status)) + ")");
  }
  return true;
}

bool ConvEngine::run(const ConvProblem& p, const void* x, const void* w, void* out,
                     int num_threads) {
  check(p);
  const std::int64_t numel = p.out.numel();
  if (numel == 0) return false;
  if (p.w.numel() == 0) {  // no input channels: every sum is empty, 0 in every float dtype
    std::memset(out, 0, static_cast<std::size_t>(numel) * element_size(p.dtype));
    return false;
  }
  ScopedThreads threads(num_threads);
  try {
    const State::Found found = state_->find_plan(p, num_threads, true);
    const Plan& plan = *found.plan;
    AlignedBuffer x32, w32, out32;
    void* result = out;
    if (plan.compute != p.dtype) {
      x32 = widen(p.dtype, x, p.x.numel(), num_threads);
      w32 = widen(p.dtype, w, p.w.numel(), num_threads);
      out32 = allocate_f32(numel);
      x = x32.get();
      w = w32.get();
      result = out32.get();
    }
    const dnnl::engine& engine = state_->engine;
    dnnl::stream stream(engine);  // per call: streams are not thread-safe, and cheap on the CPU
    memory x_mem(plan.x_md, engine, const_cast<void*>(x));
    memory w_mem(plan.w_md, engine, const_cast<void*>(w));
    memory out_mem(plan.out_md, engine, result);
    // Blocked layouts: x and w reordered into buffers first, the result out of one after.
    AlignedBuffer x_blocked, w_blocked, out_blocked;
    auto in = [&](const Reorder& r, memory& mem, AlignedBuffer& buffer) {
      if (!r) return;
      buffer = allocate_aligned(r.md.get_size());
      memory to(r.md, engine, buffer.get());
      r.primitive.execute(stream, mem, to);
      mem = to;
    };
    in(plan.x_in, x_mem, x_blocked);
    in(plan.w_in, w_mem, w_blocked);
    memory dst = out_mem;
    if (plan.out_back) {
      out_blocked = allocate_aligned(plan.out_back.md.get_size());
      dst = memory(plan.out_back.md, engine, out_blocked.get());
    }
    const Scratchpad pad(plan.scratchpad_md.get_size());
    const memory scratchpad(plan.scratchpad_md, engine, pad.data());
    plan.primitive.execute(stream, {{DNNL_ARG_SRC, x_mem},
                                    {DNNL_ARG_WEIGHTS, w_mem},
                                    {DNNL_ARG_DST, dst},
                                    {DNNL_ARG_SCRATCHPAD, scratchpad}});
    if (plan.out_back) plan.out_back.primitive.execute(stream, dst, out_mem);
    stream.wait();
    if (plan.compute != p.dtype)
      round_f32_results(p.dtype, static_cast<const float*>(result), out, numel, num_threads);
    return found.first_use;
  } catch (const dnnl::error& e) {
    throw Error(describe(p) + " failed in oneDNN: " + e.what() + " (status " +
                std::to_string(static_cast<int>(e.status)) + ")");
  }
}

}  // namespace streamfuse::backends::cpu
