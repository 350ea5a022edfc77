// Every tensor op. Each validates its operands at once (shapes broadcast, dtypes promote, devices
// match) and throws a subclass of streamfuse::Error naming the op, the shapes and the dtypes;
// then it records the op and returns the result's handle without running anything. A function
// made of other ops (zeros, clamp, unsqueeze, nn::softmax, ...) names itself, then the op inside
// it that failed: "softmax: axis 5 is out of range ... (in its max step)".
//
// Tensors are taken by value: pass a temporary or std::move(t) and the op may reuse its memory.
// Broadcasting and type promotion follow NumPy/PyTorch (see promote_types and Scalar).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "streamfuse/error.h"
#include "streamfuse/tensor.h"

namespace streamfuse {

// ---- creation --------------------------------------------------------------------------------

// Copies `n` elements of `dtype` from `data` into a new tensor of `shape` (n must be its numel).
Tensor from_blob(const void* data, DType dtype, Shape shape, Device device = Device::cpu());
template <class T>
Tensor from_blob(const T* data, Shape shape, Device device = Device::cpu()) {
  return from_blob(static_cast<const void*>(data), dtype_of<T>(), shape, device);
}
// Wraps `data` (host memory, `shape` elements of `dtype`, contiguous) as a CPU tensor without
// copying it: weights mapped from a file, a buffer the caller already has. `owner` is what keeps
// the memory alive (a mapping, a std::vector, or an aliasing shared_ptr): the tensor holds it
// until the last tensor or view reading the memory is gone, which may be after this tensor's
// handle goes (ops run lazily). streamfuse never writes the memory: an op that would reuse a
// last-use input's buffer writes new memory instead. The memory must not change while tensors
// read it. `data` must be aligned to the element size; Error otherwise, and for a null owner.
Tensor from_blob(const void* data, DType dtype, Shape shape, std::shared_ptr<const void> owner);
namespace detail {
// from_vector's work: copies `n` elements of `dtype` (n must be the shape's numel); errors name
// from_vector.
Tensor from_vector_bytes(const void* data, std::size_t n, DType dtype, Shape shape, Device device);
}  // namespace detail
// Copies `values` into a tensor of `shape` (1-D of values.size() when omitted).
template <class T>
Tensor from_vector(const std::vector<T>& values, Shape shape, Device device = Device::cpu()) {
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<unsigned char> bytes(values.begin(), values.end());
    return detail::from_vector_bytes(bytes.data(), bytes.size(), kBool, shape, device);
  } else {
    return detail::from_vector_bytes(values.data(), values.size(), dtype_of<T>(), shape, device);
  }
}
template <class T>
Tensor from_vector(const std::vector<T>& values, Device device = Device::cpu()) {
  return from_vector(values, Shape{static_cast<std::int64_t>(values.size())}, device);
}

// On the CPU, a large zeros tensor (2 MiB and more) made on its own, where no freed buffer of its
// size is cached, takes fresh pages from the system: they read as zeros and get memory only
// where written (a cache allocated for the longest sequence and filled a position at a time
// costs what it holds).
Tensor zeros(Shape shape, DType dtype = kF32, Device device = Device::cpu());
Tensor ones(Shape shape, DType dtype = kF32, Device device = Device::cpu());
// Filled with `value`; the dtype defaults to the scalar's (f32, i64 or bool).
Tensor full(Shape shape, Scalar value, std::optional<DType> dtype = {},
            Device device = Device::cpu());
// [start, end) by step; i64 when all three are integers, else f32 unless dtype says otherwise.
Tensor arange(Scalar end, std::optional<DType> dtype = {}, Device device = Device::cpu());
Tensor arange(Scalar start, Scalar end, Scalar step = 1, std::optional<DType> dtype = {},
              Device device = Device::cpu());
// Uniform on [0, 1) and standard normal, float dtypes only. Values depend only on the seed and
// on how many random elements were drawn before: identical fused or not, on any thread count.
Tensor rand(Shape shape, DType dtype = kF32, Device device = Device::cpu());
Tensor randn(Shape shape, DType dtype = kF32, Device device = Device::cpu());
// Restarts the random stream of every device from `seed`.
void manual_seed(std::uint64_t seed);

Tensor zeros_like(const Tensor& t, std::optional<DType> dtype = {});
Tensor ones_like(const Tensor& t, std::optional<DType> dtype = {});
Tensor full_like(const Tensor& t, Scalar value, std::optional<DType> dtype = {});
Tensor rand_like(const Tensor& t, std::optional<DType> dtype = {});
Tensor randn_like(const Tensor& t, std::optional<DType> dtype = {});

// ---- element-wise ----------------------------------------------------------------------------
// Integer and bool inputs of the math functions (exp ... sigmoid) compute in f32; `/` is true
// division (integers give f32). Integer arithmetic wraps on overflow.

Tensor operator+(Tensor a, Tensor b);
Tensor operator+(Tensor a, Scalar b);
Tensor operator+(Scalar a, Tensor b);
Tensor operator-(Tensor a, Tensor b);
Tensor operator-(Tensor a, Scalar b);
Tensor operator-(Scalar a, Tensor b);
Tensor operator*(Tensor a, Tensor b);
Tensor operator*(Tensor a, Scalar b);
Tensor operator*(Scalar a, Tensor b);
Tensor operator/(Tensor a, Tensor b);
Tensor operator/(Tensor a, Scalar b);
Tensor operator/(Scalar a, Tensor b);
Tensor operator-(Tensor a);
// a = a op b, keeping a's shape (b broadcasts to it) and dtype (a result of another float dtype,
// or of another integer dtype, converts back; a float result for an integer a is a DTypeError),
// as PyTorch's in-place ops. Value semantics: the handle is rebound, other handles of a's old
// value keep it, and when a was its only handle the result is written into its memory.
Tensor& operator+=(Tensor& a, const Tensor& b);
Tensor& operator-=(Tensor& a, const Tensor& b);
Tensor& operator*=(Tensor& a, const Tensor& b);
Tensor& operator/=(Tensor& a, const Tensor& b);
Tensor& operator+=(Tensor& a, Scalar b);
Tensor& operator-=(Tensor& a, Scalar b);
Tensor& operator*=(Tensor& a, Scalar b);
Tensor& operator/=(Tensor& a, Scalar b);

Tensor neg(Tensor x);
Tensor abs(Tensor x);
Tensor exp(Tensor x);
Tensor log(Tensor x);
Tensor sqrt(Tensor x);
Tensor rsqrt(Tensor x);
Tensor recip(Tensor x);
Tensor sin(Tensor x);
Tensor cos(Tensor x);
Tensor tanh(Tensor x);
Tensor erf(Tensor x);
Tensor sigmoid(Tensor x);
Tensor relu(Tensor x);

Tensor pow(Tensor base, Tensor exponent);
Tensor pow(Tensor base, Scalar exponent);
Tensor pow(Scalar base, Tensor exponent);
// Element-wise max / min; NaN wins, as in PyTorch.
Tensor maximum(Tensor a, Tensor b);
Tensor maximum(Tensor a, Scalar b);
Tensor minimum(Tensor a, Tensor b);
Tensor minimum(Tensor a, Scalar b);
// minimum(maximum(x, lo), hi).
Tensor clamp(Tensor x, Scalar lo, Scalar hi);
Tensor clamp(Tensor x, Tensor lo, Tensor hi);

// Comparisons give bool tensors.
Tensor operator==(Tensor a, Tensor b);
Tensor operator==(Tensor a, Scalar b);
Tensor operator!=(Tensor a, Tensor b);
Tensor operator!=(Tensor a, Scalar b);
Tensor operator<(Tensor a, Tensor b);
Tensor operator<(Tensor a, Scalar b);
Tensor operator<=(Tensor a, Tensor b);
Tensor operator<=(Tensor a, Scalar b);
Tensor operator>(Tensor a, Tensor b);
Tensor operator>(Tensor a, Scalar b);
Tensor operator>=(Tensor a, Tensor b);
Tensor operator>=(Tensor a, Scalar b);

// Any dtype; non-zero is true; the result is bool.
Tensor logical_and(Tensor a, Tensor b);
Tensor logical_or(Tensor a, Tensor b);
Tensor logical_not(Tensor x);

// `a` where cond is true, else `b`; cond is bool; a and b broadcast and promote.
Tensor where(Tensor cond, Tensor a, Tensor b);
Tensor where(Tensor cond, Tensor a, Scalar b);
Tensor where(Tensor cond, Scalar a, Tensor b);

// ---- reductions ------------------------------------------------------------------------------
// Over every element (a 0-d result) or over one axis (negative counts from the end), dropping it
// unless keepdim. sum of bool/integers gives i64; mean of bool/integers gives f32; max/min keep
// the dtype and propagate NaN; argmax gives the i64 index of the first maximum. Float sums and
// means add in double, up to 8 elements at a time in float (error at most 7 * 2^-24 of the sum
// of the magnitudes, before the result's rounding), in an order fixed by the shape alone: the
// same bits for any thread count, fused or not, on the CPU and on CUDA.

Tensor sum(Tensor x);
Tensor sum(Tensor x, int axis, bool keepdim = false);
Tensor mean(Tensor x);
Tensor mean(Tensor x, int axis, bool keepdim = false);
Tensor max(Tensor x);
Tensor max(Tensor x, int axis, bool keepdim = false);
Tensor min(Tensor x);
Tensor min(Tensor x, int axis, bool keepdim = false);
Tensor argmax(Tensor x);
Tensor argmax(Tensor x, int axis, bool keepdim = false);
// Over several axes at once (each named once; none: x unchanged): sum(x, {0, 2}, true).
Tensor sum(Tensor x, std::span<const int> axes, bool keepdim = false);
Tensor sum(Tensor x, std::initializer_list<int> axes, bool keepdim = false);
Tensor mean(Tensor x, std::span<const int> axes, bool keepdim = false);
Tensor mean(Tensor x, std::initializer_list<int> axes, bool keepdim = false);
Tensor max(Tensor x, std::span<const int> axes, bool keepdim = false);
Tensor max(Tensor x, std::initializer_list<int> axes, bool keepdim = false);
Tensor min(Tensor x, std::span<const int> axes, bool keepdim = false);
Tensor min(Tensor x, std::initializer_list<int> axes, bool keepdim = false);
// Running sums along `axis`: out[..., k, ...] = x[..., 0, ...] + ... + x[..., k, ...], in order,
// accumulated in double for float dtypes (each prefix rounded to the dtype) and in wrapping i64
// for integers and bool (an i64 result), as PyTorch's CPU cumsum.
Tensor cumsum(Tensor x, int axis);
// The i64 positions along `axis` that sort x there, stably (equal elements keep their order;
// -0 equals +0); NaN sorts after every number (first when descending).
Tensor argsort(Tensor x, int axis = -1, bool descending = false);
struct Sorted {
  Tensor values;   // x's elements in order along the axis
  Tensor indices;  // their positions in x (i64)
};
// x sorted along `axis` (argsort's order), with the positions.
Sorted sort(Tensor x, int axis = -1, bool descending = false);
// The k largest (or smallest) elements along `axis`, largest (smallest) first, ties in x's order,
// with their positions; 0 <= k <= the axis' size.
Sorted topk(Tensor x, std::int64_t k, int axis = -1, bool largest = true);
// Variance: the sum of squared deviations from the mean divided by (n - correction), over
// `axis` or all elements (correction 1: the sample variance, PyTorch's default; 0: the
// population's). Integer inputs compute in f32, bool is a DTypeError. n <= correction divides
// by zero or less (inf or nan, as PyTorch). std: its square root.
Tensor var(Tensor x, int axis, bool keepdim = false, double correction = 1);
Tensor var(Tensor x, double correction = 1);
Tensor std(Tensor x, int axis, bool keepdim = false, double correction = 1);
Tensor std(Tensor x, double correction = 1);

// ---- linear algebra --------------------------------------------------------------------------

// NumPy matmul: 1-D operands are promoted to a row / column and the added dimension removed;
// batch dimensions broadcast. Numeric dtypes; both operands promote to one dtype.
Tensor matmul(Tensor a, Tensor b);

// ---- movement --------------------------------------------------------------------------------
// Views where the layout allows (no copy); copies otherwise. Values never alias visibly.

// One dimension may be -1 and is inferred.
Tensor reshape(Tensor x, Shape shape);
Tensor permute(Tensor x, std::span<const int> axes);
Tensor permute(Tensor x, std::initializer_list<int> axes);
Tensor transpose(Tensor x, int axis0, int axis1);
// Broadcasts size-1 dimensions (and new leading ones) to `shape`; -1 keeps a dimension.
Tensor expand(Tensor x, Shape shape);
// Elements start, start+step, ... below stop along `axis` (step > 0). Negative bounds count from
// the end; a bound outside [-size, size] throws ShapeError rather than being clamped silently
// (a likely bug); start >= stop gives an empty slice.
Tensor slice(Tensor x, int axis, std::int64_t start, std::int64_t stop, std::int64_t step = 1);
// Joins along `axis`; all other dimensions must match; dtypes promote.
Tensor cat(std::span<const Tensor> tensors, int axis = 0);
Tensor cat(std::initializer_list<Tensor> tensors, int axis = 0);
Tensor contiguous(Tensor x);
// Inserts / removes a size-1 dimension.
Tensor unsqueeze(Tensor x, int axis);
Tensor squeeze(Tensor x, int axis);
Tensor flatten(Tensor x);
// x reversed along `axis`.
Tensor flip(Tensor x, int axis);
// The lower (tril) or upper (triu) triangle of the last two dimensions, the rest zero: elements
// with column - row <= diagonal (tril) or >= diagonal (triu) kept.
Tensor tril(Tensor x, std::int64_t diagonal = 0);
Tensor triu(Tensor x, std::int64_t diagonal = 0);
// x with `value` where `mask` (bool, broadcasting to x's shape) is true.
Tensor masked_fill(Tensor x, Tensor mask, Scalar value);

// ---- indexing --------------------------------------------------------------------------------

// x's slices along `axis` at `indices` (i32 or i64, any shape; their dimensions replace the
// axis): out[..., j..., ...] = x[..., indices[j...], ...]. A 1-D `indices` is PyTorch's
// index_select; numpy's take along an axis. Every index must lie in [0, size of the axis): one
// outside is an Error naming it and its position, raised where the result (or anything computed
// from it) is read, since indices are values the op reads when it runs.
Tensor index_select(Tensor x, int axis, Tensor indices);
// The rows of `weight` ([num_embeddings, dim...]) at `ids` (i32 or i64, any shape):
// index_select(weight, 0, ids), of shape ids.shape + weight.shape[1:].
Tensor embedding(Tensor weight, Tensor ids);
// Elements of x picked along `axis` by `index` (i32 or i64, x's rank; along every other axis no
// larger than x): out has index's shape and out[i, j, ...] = x[i, ..., index[i, j, ...], ...]
// with the index in place of the axis coordinate (PyTorch's gather). Out-of-range indices as
// index_select.
Tensor gather(Tensor x, int axis, Tensor index);

// ---- updating part of a tensor (value semantics) ---------------------------------------------

// x with its elements start .. start + src.shape[axis] - 1 along `axis` replaced by src (x's
// shape along every other axis; converted to x's dtype). A negative start counts from the end.
// x itself is unchanged, as for every op; but when this call holds x's last handle (it was
// moved in) the result takes x's memory and only the slice is written:
//   kv = sf::slice_update(std::move(kv), 1, t, k_new);  // writes k_new's rows, copies nothing
Tensor slice_update(Tensor x, int axis, std::int64_t start, Tensor src);
// x with its slices along `axis` at `indices` (1-D, i32 or i64) replaced by src's slices, the
// j-th by the j-th (src: x's shape but indices' count along the axis; converted to x's dtype). A
// repeated index takes the last of its slices. In x's memory when x is moved in, as
// slice_update. An index out of range is an Error naming it, raised where the result is read.
Tensor index_put(Tensor x, int axis, Tensor indices, Tensor src);
// x with src's elements written where index points along `axis` (PyTorch's scatter): for axis 1
// of 3-D tensors, out[i][index[i][j][k]][k] = src[i][j][k] for every position of index. index
// (i32 or i64) has x's rank and no dimension larger than src's, nor than x's but along axis;
// src is converted to x's dtype. A position written twice keeps the later one along the axis.
// In x's memory when x is moved in, as slice_update. An index out of range is an Error naming
// it, raised where the result is read.
Tensor scatter(Tensor x, int axis, Tensor index, Tensor src);
// The same with every written element `value`.
Tensor scatter(Tensor x, int axis, Tensor index, Scalar value);
// scatter, src's elements added to x's instead (repeated positions add up, in order along the
// axis: results independent of the device and thread count). Not for bool.
Tensor scatter_add(Tensor x, int axis, Tensor index, Tensor src);

// ---- neural-network functions, composed from the ops above so they fuse ----------------------

namespace nn {

enum class GeluApproximation : unsigned char { kNone, kTanh };

// x * Φ(x): exact (erf) or the tanh approximation.
Tensor gelu(Tensor x, GeluApproximation approximation = GeluApproximation::kNone);
// exp(x - max) / sum(exp(x - max)) along `axis`.
Tensor softmax(Tensor x, int axis = -1);
// log(softmax(x)) computed without overflow: (x - max) - log(sum(exp(x - max))) along `axis`.
Tensor log_softmax(Tensor x, int axis = -1);
// Normalizes over the trailing dimensions `normalized_shape`, then scales by weight and shifts by
// bias when given (each of shape normalized_shape).
Tensor layer_norm(Tensor x, Shape normalized_shape, std::optional<Tensor> weight = {},
                  std::optional<Tensor> bias = {}, double eps = 1e-5);
// x / sqrt(mean(x^2) + eps) over the trailing dimensions `normalized_shape`, then scaled by
// weight when given (of shape normalized_shape). Without eps, the epsilon of float (as PyTorch's
// rms_norm takes its dtype's).
Tensor rms_norm(Tensor x, Shape normalized_shape, std::optional<Tensor> weight = {},
                std::optional<double> eps = {});
// x * sigmoid(x).
Tensor silu(Tensor x);

// ---- convolutions and pooling (PyTorch's torch.nn.functional semantics) ----------------------
// Pairs are (height, width). Inputs are float tensors (f32, f16, bf16; mixed dtypes promote),
// batched [N, C, H, W] (conv1d: [N, C, L]) or unbatched without N.

struct Conv2dOptions {
  std::array<std::int64_t, 2> stride{1, 1};
  std::array<std::int64_t, 2> padding{0, 0};  // zeros on both sides
  std::array<std::int64_t, 2> dilation{1, 1};
  std::int64_t groups = 1;  // channels split into groups convolved independently
};
// Cross-correlation of x [N, C, H, W] with weight [O, C / groups, kH, kW], plus bias [O] when
// given: [N, O, OH, OW], OH = (H + 2 * padding - dilation * (kH - 1) - 1) / stride + 1. f16 and
// bf16 accumulate in f32. The bias add is an element-wise op: it fuses with the ops after it.
//   y = sf::nn::conv2d(x, w, b, {.stride = {2, 2}, .padding = {1, 1}});
Tensor conv2d(Tensor x, Tensor weight, std::optional<Tensor> bias = {},
              const Conv2dOptions& options = {});

struct Conv1dOptions {
  std::int64_t stride = 1;
  std::int64_t padding = 0;
  std::int64_t dilation = 1;
  std::int64_t groups = 1;
};
// conv2d along one dimension: x [N, C, L], weight [O, C / groups, K], bias [O].
Tensor conv1d(Tensor x, Tensor weight, std::optional<Tensor> bias = {},
              const Conv1dOptions& options = {});

struct Pool2dOptions {
  std::array<std::int64_t, 2> stride{0, 0};    // 0: the kernel size (PyTorch's default)
  std::array<std::int64_t, 2> padding{0, 0};   // at most half the kernel size
  std::array<std::int64_t, 2> dilation{1, 1};  // max_pool2d only
  bool ceil_mode = false;         // keep a last window that starts inside the input or left padding
  bool count_include_pad = true;  // avg_pool2d: padding positions count in the divisor
};
// The largest element of each window of each channel (NaN when the window holds one).
Tensor max_pool2d(Tensor x, std::array<std::int64_t, 2> kernel_size,
                  const Pool2dOptions& options = {});
// The mean of each window of each channel, summed in f32 in row-major order, as PyTorch's.
Tensor avg_pool2d(Tensor x, std::array<std::int64_t, 2> kernel_size,
                  const Pool2dOptions& options = {});

}  // namespace nn

}  // namespace streamfuse
