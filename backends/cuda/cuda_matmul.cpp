// CudaMatmul: maps a product's MatmulLayout onto cuBLAS calls (operands swapped for the
// column-major convention, each read as stored or transposed), groups its batch into as few
// strided-batched calls as the strides allow, and keeps one cuBLAS handle per stream.
#include "backends/cuda/cuda_matmul.h"

#include <cublas_v2.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include <boost/unordered/unordered_flat_map.hpp>

#include "backends/cuda/context.h"
#include "backends/cuda/cublas_api.h"
#include "backends/cuda/driver_api.h"
#include "streamfuse/error.h"

namespace streamfuse::backends::cuda {
namespace {

// A matrix as cuBLAS reads it.
struct CublasMatrix {
  cublasOperation_t op = CUBLAS_OP_N;
  std::int64_t ld = 1;
};

// How cuBLAS reads the row-major rows x cols view `x` as the column-major cols x rows matrix x^T:
// as stored (OP_N) when x's row elements are adjacent, its row stride the leading dimension; as
// the transpose of a column-major rows x cols matrix (OP_T) when its column elements are, its
// column stride the leading dimension. A stride along a size-1 dimension addresses nothing and is
// ignored. nullopt when neither holds, or when the leading dimension is shorter than the matrix
// stored (cuBLAS requires ld >= its rows, which also rules out negative and zero strides).
std::optional<CublasMatrix> as_cublas(std::int64_t rows, std::int64_t cols, std::int64_t row_stride,
                                      std::int64_t col_stride) {
  if ((col_stride == 1 || cols == 1) &&
      (rows == 1 || row_stride >= std::max<std::int64_t>(1, cols)))
    return CublasMatrix{CUBLAS_OP_N, rows == 1 ? std::max<std::int64_t>(1, cols) : row_stride};
  if ((row_stride == 1 || rows == 1) &&
      (cols == 1 || col_stride >= std::max<std::int64_t>(1, rows)))
    return CublasMatrix{CUBLAS_OP_T, cols == 1 ? std::max<std::int64_t>(1, rows) : col_stride};
  return std::nullopt;
}

std::optional<CublasMatrix> as_cublas(const MatrixLayout& x) {
  return as_cublas(x.rows, x.cols, x.row_stride, x.col_stride);
}

// One batch dimension of the product: its size and the element strides of a, b and out along it.
struct BatchDim {
  std::int64_t size = 1, a = 0, b = 0, out = 0;
};

struct BatchDims {
  std::array<BatchDim, kMaxRank> dims{};  // innermost first
  int rank = 0;
};

// The product's batch dimensions of size > 1, adjacent ones merged where a, b and out all step
// through the inner one as one stride (a broadcasting operand steps by 0 through both).
BatchDims batch_dims(const MatmulLayout& l) {
  BatchDims out;
  std::int64_t out_stride = l.m * l.n;  // `out` is contiguous
  for (int d = l.batch_rank - 1; d >= 0; --d) {
    const auto i = static_cast<std::size_t>(d);
    const BatchDim dim{l.batch[i], l.a.batch_strides[i], l.b.batch_strides[i], out_stride};
    out_stride *= l.batch[i];
    if (dim.size == 1) continue;
    if (out.rank > 0) {
      BatchDim& inner = out.dims[static_cast<std::size_t>(out.rank - 1)];
      if (dim.a == inner.a * inner.size && dim.b == inner.b * inner.size &&
          dim.out == inner.out * inner.size) {
        inner.size *= dim.size;
        continue;
      }
    }
    out.dims[static_cast<std::size_t>(out.rank++)] = dim;
  }
  return out;
}

cudaDataType cuda_type(DType dtype) {
  return dtype == kF16 ? CUDA_R_16F : dtype == kBF16 ? CUDA_R_16BF : CUDA_R_32F;
}

// "matmul of f32 operands [2, 3] and [3, 4]": how every message names the product.
std::string describe(DType dtype, const MatmulOperand& a, const MatmulOperand& b) {
  return "matmul of " + std::string(dtype_name(dtype)) + " operands " + a.shape.to_string() +
         " and " + b.shape.to_string();
}

// One stream's handle; its mutex keeps two threads from using it at once (a handle is not
// thread-safe), while products on other streams proceed.
struct Handle {
  cublasHandle_t handle = nullptr;
  std::mutex mutex;
};

// Makes `context` current on this thread for the scope's duration, and the previous one after:
// the destructor and release_stream() may run on any thread, whose current context is not ours
// to change.
class ScopedContext {
 public:
  explicit ScopedContext(const DeviceContext& context) : driver_(context.driver()) {
    driver_.ctx_get_current(&previous_);
    driver_.ctx_set_current(context.context());
  }
  ~ScopedContext() { driver_.ctx_set_current(previous_); }
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;

 private:
  const Driver& driver_;
  CUcontext previous_ = nullptr;
};

}  // namespace

struct CudaMatmul::Impl {
  std::shared_ptr<const DeviceContext> context;
  mutable std::mutex mutex;  // guards `handles`
  boost::unordered_flat_map<CUstream, std::unique_ptr<Handle>> handles;

  Handle& handle_for(const Cublas& cublas, CUstream stream);
  void enqueue(const Cublas& cublas, cublasHandle_t handle, DType dtype, const MatmulLayout& l,
               const char* a, const char* b, char* out) const;
};

// Handles are made lazily, with the context current (a handle belongs to the device current when
// it is made), and kept until release_stream() or the destructor: creating one costs a
// workspace allocation and more than a product does.
Handle& CudaMatmul::Impl::handle_for(const Cublas& cublas, CUstream stream) {
  std::lock_guard lock(mutex);
  if (auto it = handles.find(stream); it != handles.end()) return *it->second;
  auto h = std::make_unique<Handle>();
  cublas.check(cublas.create(&h->handle), "cublasCreate_v2");
  // Default math: no TF32 for f32 products. The flag keeps f16 and bf16 products from reducing
  // split-k partial sums in their 16-bit output type: they round once, as the CPU's do.
  const cublasStatus_t set_stream = cublas.set_stream(h->handle, stream);
  const cublasStatus_t set_math =
      set_stream != CUBLAS_STATUS_SUCCESS
          ? set_stream
          : cublas.set_math_mode(h->handle, static_cast<cublasMath_t>(
                                                CUBLAS_DEFAULT_MATH |
                                                CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
  if (set_math != CUBLAS_STATUS_SUCCESS) {
    cublas.destroy(h->handle);
    cublas.check(set_math,
                 set_stream != CUBLAS_STATUS_SUCCESS ? "cublasSetStream_v2" : "cublasSetMathMode");
  }
  return *handles.emplace(stream, std::move(h)).first->second;
}

// One call per combination of the batch dimensions other than the largest, which each call
// covers with one batch stride per matrix (0 for a broadcasting operand). cuBLAS computes
// out^T (n x m) = b^T (n x k) * a^T (k x m).
void CudaMatmul::Impl::enqueue(const Cublas& cublas, cublasHandle_t handle, DType dtype,
                               const MatmulLayout& l, const char* a, const char* b,
                               char* out) const {
  const CublasMatrix ma = *as_cublas(l.a), mb = *as_cublas(l.b);
  const cudaDataType type = cuda_type(dtype);
  const auto size = static_cast<std::int64_t>(element_size(dtype));
  const float one = 1.0f, zero = 0.0f;  // the scalars' type for CUBLAS_COMPUTE_32F

  const BatchDims dims = batch_dims(l);
  int batched = -1;
  for (int i = 0; i < dims.rank; ++i)
    if (batched < 0 || dims.dims[static_cast<std::size_t>(i)].size >
                           dims.dims[static_cast<std::size_t>(batched)].size)
      batched = i;
  const BatchDim group = batched >= 0 ? dims.dims[static_cast<std::size_t>(batched)] : BatchDim{};

  std::array<std::int64_t, kMaxRank> index{};  // over the dimensions other than `batched`
  for (;;) {
    std::int64_t oa = 0, ob = 0, oc = 0;
    for (int i = 0; i < dims.rank; ++i) {
      const auto u = static_cast<std::size_t>(i);
      oa += index[u] * dims.dims[u].a;
      ob += index[u] * dims.dims[u].b;
      oc += index[u] * dims.dims[u].out;
    }
    const char* pa = a + oa * size;
    const char* pb = b + ob * size;
    char* pc = out + oc * size;
    if (group.size == 1) {
      cublas.check(
          cublas.gemm_ex(handle, mb.op, ma.op, l.n, l.m, l.k, &one, pb, type, mb.ld, pa, type,
                         ma.ld, &zero, pc, type, l.n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx_64");
    } else {
      cublas.check(cublas.gemm_strided_batched_ex(handle, mb.op, ma.op, l.n, l.m, l.k, &one, pb,
                                                  type, mb.ld, group.b, pa, type, ma.ld, group.a,
                                                  &zero, pc, type, l.n, group.out, group.size,
                                                  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                   "cublasGemmStridedBatchedEx_64");
    }
    int i = 0;
    for (; i < dims.rank; ++i) {
      const auto u = static_cast<std::size_t>(i);
      if (i == batched) continue;
      if (++index[u] < dims.dims[u].size) break;
      index[u] = 0;
    }
    if (i == dims.rank) return;
  }
}

CudaMatmul::CudaMatmul(std::shared_ptr<const DeviceContext> context)
    : impl_(std::make_unique<Impl>()) {
  impl_->context = std::move(context);
}

CudaMatmul::~CudaMatmul() {
  if (impl_->handles.empty()) return;
  const Cublas* cublas = Cublas::get();  // loaded: it made the handles
  ScopedContext current(*impl_->context);
  // At process exit the driver may already be shutting down: nothing to report then.
  for (auto& [stream, h] : impl_->handles) cublas->destroy(h->handle);
}

bool CudaMatmul::reads_directly(const MatmulOperand& x) {
  const int r = x.shape.rank();
  if (r < 1) return false;
  if (x.shape.numel() == 0) return true;  // nothing is read
  const auto& s = x.strides;
  // A 1-D operand is read as a row or a column alike: a vector of stride s[0].
  if (!(r == 1 ? as_cublas(1, x.shape[0], 0, s[0])
               : as_cublas(x.shape[r - 2], x.shape[r - 1], s[static_cast<std::size_t>(r - 2)],
                           s[static_cast<std::size_t>(r - 1)])))
    return false;
  std::int64_t expected = -1;  // the stride that would continue the inner dimensions outward
  for (int d = r - 3; d >= 0; --d) {
    const std::int64_t size = x.shape[d], stride = s[static_cast<std::size_t>(d)];
    if (size == 1 || stride == 0) continue;  // broadcast: the product steps through it by 0
    if (stride < 0 || (expected >= 0 && stride != expected)) return false;
    expected = stride * size;
  }
  return true;
}

void CudaMatmul::run(DType dtype, const MatmulOperand& a, const MatmulOperand& b, void* out,
                     const Shape& out_shape, CUstream stream) {
  if (!is_floating(dtype))
    throw Error("internal: " + describe(dtype, a, b) +
                " reached cuBLAS, which runs f32, f16 and bf16 products only");
  if (!reads_directly(a) || !reads_directly(b))
    throw Error("internal: " + describe(dtype, a, b) +
                " reached cuBLAS with an operand it cannot read as laid out; pass a contiguous "
                "copy");
  const std::int64_t numel = out_shape.numel();
  if (numel == 0) return;  // m, n or a batch dimension is 0: nothing to write
  const DeviceContext& context = *impl_->context;
  const MatmulLayout layout = make_matmul_layout(a, b, out_shape);
  context.make_current();
  if (layout.k == 0) {  // an empty sum; all-zero bits are 0 in every float dtype
    const Driver& d = context.driver();
    const CUresult r =
        d.memset_d8_async(reinterpret_cast<CUdeviceptr>(out), 0,
                          static_cast<std::size_t>(numel) * element_size(dtype), stream);
    if (r != CUDA_SUCCESS) d.check(r, describe(dtype, a, b) + " (k = 0): cuMemsetD8Async");
    return;
  }
  const Cublas* loaded = Cublas::get();
  const Cublas& cublas =
      loaded ? *loaded : Cublas::require("run " + describe(dtype, a, b) + " on " + context.name());
  // Messages name the product only when something fails: no string is built per product.
  try {
    Handle& h = impl_->handle_for(cublas, stream);
    std::lock_guard lock(h.mutex);
    impl_->enqueue(cublas, h.handle, dtype, layout, static_cast<const char*>(a.data),
                   static_cast<const char*>(b.data), static_cast<char*>(out));
  } catch (const Error& e) {  // Cublas::check's "cublasGemmEx_64 failed: ..."
    throw Error(describe(dtype, a, b) + ": " + e.what());
  }
}

void CudaMatmul::release_stream(CUstream stream) {
  std::unique_ptr<Handle> h;
  {
    std::lock_guard lock(impl_->mutex);
    auto it = impl_->handles.find(stream);
    if (it == impl_->handles.end()) return;
    h = std::move(it->second);
    impl_->handles.erase(it);
  }
  ScopedContext current(*impl_->context);
  Cublas::get()->destroy(h->handle);
}

std::size_t CudaMatmul::handles() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->handles.size();
}

}  // namespace streamfuse::backends::cuda
