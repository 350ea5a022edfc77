#include "jit/cuda_op_kernels.h"

#include <algorithm>

#include <boost/container/small_vector.hpp>

#include "backends/cpu/kernels/layout.h"
#include "backends/cuda/device_memory.h"
#include "backends/index_layout.h"
#include "backends/scan_layout.h"
#include "backends/views.h"
#include "core/scalar_ops.h"
#include "jit/cuda_codegen.h"
#include "jit/cuda_launch_args.h"
#include "jit/cuda_library_source.h"
#include "jit/single_op_program.h"
#include "streamfuse/error.h"

// Prelude text: after core/scalar_ops.h, which it builds on.
#include "core/reduce_math.h"

namespace streamfuse::jit {
namespace {

using backends::TensorHandle;
using core::OpDesc;
using core::OpKind;

// A key packing the fields `bits` wide each.
struct KeyBuilder {
  std::uint64_t key = 0;
  KeyBuilder& add(std::uint64_t v, int bits = 8) {
    key = (key << bits) | v;
    return *this;
  }
};

}  // namespace

CudaOpKernels::CudaOpKernels(std::shared_ptr<const backends::cuda::DeviceContext> device,
                             KernelLauncher& launcher, std::function<CUstream()> stream_of,
                             KernelStore* store)
    : device_(std::move(device)),
      launcher_(launcher),
      stream_of_(std::move(stream_of)),
      store_(store),
      toolchain_(device_) {}

const CudaOpKernels::Program& CudaOpKernels::program(std::uint64_t key,
                                                     const std::function<FusedProgram()>& make) {
  std::lock_guard lock(programs_mutex_);
  auto it = programs_.find(key);
  if (it == programs_.end()) {
    auto p = std::make_unique<Program>();
    p->program = make();
    p->facts = ProgramFacts::of(p->program);
    it = programs_.emplace(key, std::move(p)).first;
  }
  return *it->second;  // entries are never removed: one per kind and dtypes
}

void CudaOpKernels::elementwise(const core::OpDesc& op, std::span<const TensorHandle> inputs,
                                const TensorHandle& out) {
  KeyBuilder k;
  k.add(1).add(static_cast<std::uint64_t>(op.kind)).add(static_cast<std::uint64_t>(op.attrs.dtype));
  k.add(static_cast<std::uint64_t>(op.attrs.scalar_side), 2);
  for (const core::TensorDesc& d : op.inputs) k.add(static_cast<std::uint64_t>(d.dtype), 4);
  k.add(static_cast<std::uint64_t>(op.outputs[0].dtype), 4);
  const Program& p = program(k.key, [&] { return single_op_program(op); });

  const core::TensorDesc& od = op.outputs[0];
  boost::container::small_vector<LaunchOperand, 3> in;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    in.push_back({&inputs[i], op.inputs[i].shape, op.inputs[i].dtype});
  const LaunchOperand result{&out, od.shape, od.dtype};
  boost::container::small_vector<std::int64_t, 1> scalars;
  for (const ScalarArg& arg : p.program.scalars) scalars.push_back(scalar_bits(arg, op.scalars[0]));
  launcher_.launch(p.program, p.facts, od.shape, in, {&result, 1}, scalars);
}

void CudaOpKernels::copy(const Shape& shape, const TensorHandle& from, DType from_dtype,
                         const TensorHandle& to, DType to_dtype) {
  const std::uint64_t key = KeyBuilder{}
                                .add(2)
                                .add(static_cast<std::uint64_t>(from_dtype))
                                .add(static_cast<std::uint64_t>(to_dtype))
                                .key;
  const Program& p = program(key, [&] { return copy_program(from_dtype, to_dtype); });
  const LaunchOperand in{&from, shape, from_dtype};
  const LaunchOperand result{&to, shape, to_dtype};
  launcher_.launch(p.program, p.facts, shape, {&in, 1}, {&result, 1}, {});
}

CUfunction CudaOpKernels::library_kernel(const std::string& name, const std::string& source,
                                         const std::string& kernel) {
  std::lock_guard lock(modules_mutex_);
  auto it = modules_.find(name);
  if (it == modules_.end()) {
    std::string why;
    if (!toolchain_.prepare(why)) throw Error(why);
    const std::string unit = cuda_kernel_prelude() + "\n" + source;
    const std::string image = toolchain_.image_name(unit);
    std::shared_ptr<void> module;
    // Built by an earlier process: loaded. One that does not load (a driver update) is built
    // again and replaces it.
    if (std::shared_ptr<const LibraryImage> stored =
            store_ ? store_->load_library(image) : nullptr) {
      try {
        module = toolchain_.load(*stored);
        ++modules_loaded_;
      } catch (const CompileError&) {
      }
    }
    if (!module) {
      BuiltLibrary built = toolchain_.build(unit);
      module = std::move(built.library);
      if (store_)
        store_->save_library(
            LibraryImage{built.key, toolchain_.fingerprint(), unit, std::move(built.bytes)});
    }
    it = modules_.emplace(name, Module{std::move(module), {}}).first;
  }
  Module& m = it->second;
  if (auto f = m.functions.find(kernel); f != m.functions.end()) return f->second;
  void* fn = toolchain_.find(m.module, kernel);
  if (!fn)
    throw Error("internal error: kernel " + kernel +
                " missing from its module; please report this");
  m.functions.emplace(kernel, static_cast<CUfunction>(fn));
  return static_cast<CUfunction>(fn);
}

std::size_t CudaOpKernels::library_modules() const {
  std::lock_guard lock(modules_mutex_);
  return modules_.size();
}

std::size_t CudaOpKernels::library_modules_loaded() const {
  std::lock_guard lock(modules_mutex_);
  return modules_loaded_;
}

void CudaOpKernels::launch(CUfunction fn, std::int64_t blocks, void* args,
                           const std::string& what) {
  const backends::cuda::Driver& d = device_->driver();
  void* params[] = {args};
  device_->make_current();
  d.check(d.launch_kernel(fn, static_cast<unsigned>(blocks), 1, 1, kCudaBlockSize, 1, 1, 0,
                          stream_of_(), params, nullptr),
          "launching " + what + " on " + device_->name());
}

void CudaOpKernels::arange(const core::OpDesc& op, const TensorHandle& out) {
  const DType dtype = op.outputs[0].dtype;
  const bool integral = !op.scalars[0].is_floating() && !op.scalars[1].is_floating();
  const std::string name =
      std::string("sf_arange_") + std::string(dtype_name(dtype)) + (integral ? "_int" : "_float");
  const CUfunction fn = library_kernel(name, cuda_arange_source(dtype, integral, name), name);
  CudaArangeArgs a{out.storage.data(),     op.outputs[0].shape.numel(), op.scalars[0].to_int(),
                   op.scalars[1].to_int(), op.scalars[0].to_double(),   op.scalars[1].to_double()};
  if (!integral) a.start_i = a.step_i = 0;
  launch(fn, cuda_grid_blocks(a.numel, device_->properties().multiprocessors), &a, "arange");
}

void CudaOpKernels::random(const core::OpDesc& op, const TensorHandle& out) {
  const DType dtype = op.outputs[0].dtype;
  const std::string name = std::string("sf_") + std::string(core::op_name(op.kind)) + "_" +
                           std::string(dtype_name(dtype));
  const CUfunction fn = library_kernel(name, cuda_random_source(op.kind, dtype, name), name);
  CudaRandomArgs a{out.storage.data(),
                   op.outputs[0].shape.numel(),
                   static_cast<unsigned long long>(op.scalars[0].to_int()),
                   static_cast<unsigned long long>(op.scalars[1].to_int()),
                   op.scalars[2].to_double(),
                   op.scalars[3].to_double()};
  launch(fn, cuda_grid_blocks((a.numel + 3) / 4, device_->properties().multiprocessors), &a,
         std::string(core::op_name(op.kind)));
}

void CudaOpKernels::reduce(const core::OpDesc& op, const TensorHandle& in, const TensorHandle& out,
                           const std::function<TensorHandle(std::size_t)>& scratch) {
  const core::TensorDesc& id = op.inputs[0];
  const DType out_dtype = op.outputs[0].dtype;
  const std::string name = std::string("sf_") + std::string(core::op_name(op.kind)) + "_" +
                           std::string(dtype_name(id.dtype)) + "_" +
                           std::string(dtype_name(out_dtype));
  const std::string source = cuda_reduce_source(op.kind, id.dtype, out_dtype, name);

  CudaReduceArgs a{};
  a.in = backends::element_ptr(in, id.dtype);
  a.out = out.storage.data();
  a.outputs = 1;
  a.len = 1;
  for (int d = 0; d < id.shape.rank(); ++d) {
    if (op.attrs.axis == d || op.attrs.axis == core::kAllAxes) {
      a.len *= id.shape[d];
    } else {
      a.kept_sizes[a.kept_rank] = id.shape[d];
      a.kept_strides[a.kept_rank++] = in.strides[static_cast<std::size_t>(d)];
      a.outputs *= id.shape[d];
    }
  }
  if (a.outputs == 0) return;
  // The reduced elements as the CPU kernel walks them (backends/cpu/kernels/reduce.cpp): one
  // axis is one strided run; all elements are the input's merged dimensions, in runs along the
  // innermost.
  a.reduced_rank = 1;
  a.reduced_sizes[0] = a.len;
  if (op.attrs.axis != core::kAllAxes) {
    a.reduced_strides[0] = in.strides[static_cast<std::size_t>(op.attrs.axis)];
  } else {
    const backends::Strides* strides[1] = {&in.strides};
    const backends::cpu::Iteration it = backends::cpu::make_iteration(id.shape, strides, 1);
    for (int d = 0; d < it.rank; ++d) {
      a.reduced_sizes[d] = it.sizes[static_cast<std::size_t>(d)];
      a.reduced_strides[d] = it.strides[0][static_cast<std::size_t>(d)];
    }
    a.reduced_rank = std::max(it.rank, 1);
  }
  a.blocks = sf_reduce_blocks(a.len);
  const std::string what = std::string(core::op_name(op.kind)) + " of " + id.shape.to_string();
  const int sms = device_->properties().multiprocessors;
  // Many outputs, or short rows: a thread per output. Otherwise a thread per output and block (and
  // lane, where the reduced elements are one contiguous run: the most parallel order the
  // template allows), then a thread per output merging them.
  const bool lanes = a.reduced_rank == 1 && a.reduced_strides[0] == 1;
  a.slots = lanes ? SF_REDUCE_LANES : 1;
  if (a.outputs >= 4096 || a.len <= 1024 || (!lanes && a.blocks == 1)) {
    launch(library_kernel(name, source, name + "_rows"), cuda_grid_blocks(a.outputs, sms), &a,
           what);
    return;
  }
  const std::int64_t parts = a.outputs * a.blocks * a.slots;
  const TensorHandle partial =
      scratch(static_cast<std::size_t>(parts) * cuda_reduce_accumulator_bytes(op.kind, id.dtype));
  a.partial = partial.storage.data();
  launch(library_kernel(name, source, name + "_parts"), cuda_grid_blocks(parts, sms), &a, what);
  launch(library_kernel(name, source, name + "_combine"), cuda_grid_blocks(a.outputs, sms), &a,
         what);
  // `partial` goes back to the allocator now: reuse by this stream is ordered after the kernels,
  // by another stream through the allocator's handoff (backends/cuda/stream_set.h).
}

void CudaOpKernels::integer_matmul(DType dtype, const backends::MatmulOperand& a,
                                   const backends::MatmulOperand& b, void* out,
                                   const Shape& out_shape) {
  const backends::MatmulLayout l = backends::make_matmul_layout(a, b, out_shape);
  const std::int64_t total = l.batch_count() * l.m * l.n;
  if (total == 0) return;
  if (l.k == 0) {  // an empty sum: zeros
    const backends::cuda::Driver& d = device_->driver();
    device_->make_current();
    d.check(d.memset_d8_async(backends::cuda::device_address(out), 0,
                              static_cast<std::size_t>(total) * element_size(dtype), stream_of_()),
            "clearing a matmul result on " + device_->name());
    return;
  }
  const std::string name = std::string("sf_matmul_") + std::string(dtype_name(dtype));
  const CUfunction fn = library_kernel(name, cuda_int_matmul_source(dtype, name), name);
  CudaIntMatmulArgs args{};
  args.a = a.data;
  args.b = b.data;
  args.out = out;
  args.batch_rank = l.batch_rank;
  for (int d = 0; d < l.batch_rank; ++d) {
    const auto i = static_cast<std::size_t>(d);
    args.batch[i] = l.batch[i];
    args.a_batch_strides[i] = l.a.batch_strides[i];
    args.b_batch_strides[i] = l.b.batch_strides[i];
  }
  args.m = l.m, args.k = l.k, args.n = l.n;
  args.a_row_stride = l.a.row_stride, args.a_col_stride = l.a.col_stride;
  args.b_row_stride = l.b.row_stride, args.b_col_stride = l.b.col_stride;
  launch(fn, cuda_grid_blocks(total, device_->properties().multiprocessors), &args,
         "matmul of " + std::string(dtype_name(dtype)));
}

void CudaOpKernels::index(const core::OpDesc& op, const TensorHandle& x,
                          const TensorHandle& indices, const TensorHandle& out,
                          const TensorHandle& bad) {
  const backends::cuda::Driver& d = device_->driver();
  device_->make_current();
  d.check(d.memset_d8_async(backends::cuda::device_address(bad.storage.data()), 0, 4, stream_of_()),
          "clearing the index check on " + device_->name());
  const core::TensorDesc& xd = op.inputs[0];
  const DType index_dtype = op.inputs[1].dtype;
  const std::size_t bytes = element_size(xd.dtype);
  const std::string name = std::string("sf_") + std::string(core::op_name(op.kind)) + "_" +
                           std::to_string(bytes) + "_" + std::string(dtype_name(index_dtype));
  const CUfunction fn =
      library_kernel(name, cuda_index_source(op.kind, bytes, index_dtype, name), name);
  CudaIndexArgs a{};
  a.x = backends::element_ptr(x, xd.dtype);
  a.indices = backends::element_ptr(indices, index_dtype);
  a.out = out.storage.data();
  a.bad = static_cast<int*>(bad.storage.data());
  a.numel = op.outputs[0].shape.numel();
  const backends::IndexSelectLayout l = backends::index_select_layout(op);
  a.outer = l.outer, a.axis_size = l.axis_size, a.count = l.count, a.inner = l.inner;
  const Shape& is = op.inputs[1].shape;
  const auto strides = backends::contiguous_strides(xd.shape);
  a.rank = is.rank();
  a.axis = op.attrs.axis;
  for (int i = 0; i < is.rank(); ++i) {
    a.sizes[i] = is[i];
    a.x_strides[i] = strides[static_cast<std::size_t>(i)];
  }
  launch(fn, cuda_grid_blocks(a.numel, device_->properties().multiprocessors), &a,
         std::string(core::op_name(op.kind)));
}

void CudaOpKernels::scan(const core::OpDesc& op, const TensorHandle& x, const TensorHandle& out,
                         const std::function<TensorHandle(std::size_t)>& scratch) {
  const core::TensorDesc& xd = op.inputs[0];
  const DType out_dtype = op.outputs[0].dtype;
  const std::string name = std::string("sf_") + std::string(core::op_name(op.kind)) + "_" +
                           std::string(dtype_name(xd.dtype)) + "_" +
                           std::string(dtype_name(out_dtype));
  const CUfunction fn =
      library_kernel(name, cuda_scan_source(op.kind, xd.dtype, out_dtype, name), name);
  const backends::ScanLayout l = backends::scan_layout(xd.shape, op.attrs.axis);
  CudaScanArgs a{};
  a.x = backends::element_ptr(x, xd.dtype);
  a.out = out.storage.data();
  a.outer = l.outer, a.size = l.size, a.inner = l.inner;
  TensorHandle buffers;  // argsort's two arrays of positions, a line's each
  if (op.kind == core::OpKind::kArgsort) {
    a.descending = op.scalars[0].to_int() != 0;
    const std::size_t line_bytes = static_cast<std::size_t>(l.size) * 8;
    buffers = scratch(2 * line_bytes * static_cast<std::size_t>(l.lines()));
    a.a = static_cast<long long*>(buffers.storage.data());
    a.b = a.a + l.size * l.lines();
  }
  launch(fn, cuda_grid_blocks(l.lines(), device_->properties().multiprocessors), &a,
         std::string(core::op_name(op.kind)));
}

void CudaOpKernels::scatter(const core::OpDesc& op, const TensorHandle& index,
                            const TensorHandle& src, const TensorHandle& out,
                            const TensorHandle& bad) {
  const backends::cuda::Driver& d = device_->driver();
  device_->make_current();
  d.check(d.memset_d8_async(backends::cuda::device_address(bad.storage.data()), 0, 4, stream_of_()),
          "clearing the index check on " + device_->name());
  const DType dtype = op.inputs[0].dtype;
  const core::TensorDesc& id = op.inputs[1];
  const std::string name = std::string("sf_") + std::string(core::op_name(op.kind)) + "_" +
                           std::string(dtype_name(dtype)) + "_" + std::string(dtype_name(id.dtype));
  const CUfunction fn =
      library_kernel(name, cuda_scatter_source(op.kind, dtype, id.dtype, name), name);
  CudaScatterArgs a{};
  a.index = backends::element_ptr(index, id.dtype);
  a.src = backends::element_ptr(src, dtype);
  a.out = backends::element_ptr(out, dtype);
  a.bad = static_cast<int*>(bad.storage.data());
  a.rank = id.shape.rank();
  a.axis = op.attrs.axis;
  a.axis_size = op.inputs[0].shape[op.attrs.axis];
  a.line_size = id.shape[op.attrs.axis];
  a.lines = id.shape.numel() / a.line_size;
  const auto index_strides = backends::contiguous_strides(id.shape);
  const auto src_strides = backends::contiguous_strides(op.inputs[2].shape);
  for (int i = 0; i < id.shape.rank(); ++i) {
    const auto u = static_cast<std::size_t>(i);
    a.index_sizes[i] = id.shape[i];
    a.index_strides[i] = index_strides[u];
    a.src_strides[i] = src_strides[u];
    a.out_strides[i] = out.strides[u];
  }
  launch(fn, cuda_grid_blocks(a.lines, device_->properties().multiprocessors), &a,
         std::string(core::op_name(op.kind)));
}

void CudaOpKernels::window(const core::OpDesc& op, const TensorHandle& x, const TensorHandle* w,
                           const TensorHandle& out) {
  const DType dtype = op.outputs[0].dtype;
  const std::string name = std::string("sf_") + std::string(core::op_name(op.kind)) + "_" +
                           std::string(dtype_name(dtype));
  const CUfunction fn = library_kernel(name, cuda_window_source(op.kind, dtype, name), name);
  const Shape& xs = op.inputs[0].shape;
  const Shape& os = op.outputs[0].shape;
  const core::Window& win = op.attrs.window;
  CudaWindowArgs a{};
  a.x = backends::element_ptr(x, dtype);
  a.w = w ? backends::element_ptr(*w, dtype) : nullptr;
  a.out = out.storage.data();
  a.numel = os.numel();
  a.n = xs[0], a.c = xs[1], a.h = xs[2], a.w_size = xs[3];
  a.o = os[1], a.oh = os[2], a.ow = os[3];
  a.kh = win.kernel[0], a.kw = win.kernel[1];
  a.sh = win.stride[0], a.sw = win.stride[1];
  a.ph = win.padding[0], a.pw = win.padding[1];
  a.dh = win.dilation[0], a.dw = win.dilation[1];
  a.groups = win.groups;
  a.count_include_pad = win.count_include_pad;
  launch(fn, cuda_grid_blocks(a.numel, device_->properties().multiprocessors), &a,
         std::string(core::op_name(op.kind)));
}

}  // namespace streamfuse::jit
