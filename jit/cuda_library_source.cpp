#include "jit/cuda_library_source.h"

#include <string_view>

#include "jit/kernel_expressions.h"
#include "jit/program.h"
#include "streamfuse/error.h"

namespace streamfuse::jit {
namespace {

using core::OpKind;

// `text` with each "$KEY" of `subs` replaced (keys never prefix one another).
std::string fill(std::string text,
                 std::initializer_list<std::pair<std::string_view, std::string>> subs) {
  for (const auto& [key, value] : subs) {
    for (std::size_t at = text.find(key); at != std::string::npos;
         at = text.find(key, at + value.size()))
      text.replace(at, key.size(), value);
  }
  return text;
}

// Dtypes read as float (f64 reads as double).
bool float_storage(DType d) { return d == kF32 || d == kF16 || d == kBF16; }

// The device declarations of the host structs in cuda_library_source.h, field for field.
constexpr std::string_view kReduceArgs = R"(struct sf_reduce_args {
  const char* in;
  char* out;
  char* partial;
  long long kept_rank, kept_sizes[8], kept_strides[8];
  long long reduced_rank, reduced_sizes[8], reduced_strides[8];
  long long outputs, len, blocks, slots;
};
)";

// Reduction kernels of accumulator $OP (core/reduce_math.h), the one the CPU's eager kernel
// instantiates for the same op and dtype, folding in its order: blocks of SF_REDUCE_BLOCK
// elements, each run by run along the last reduced dimension (lanes in a contiguous run), the
// blocks' results merged in order. $LOAD(e) reads storage element e as $OP's value type, $FINISH
// stores accumulator `acc` of a reduction over a.len elements.
constexpr std::string_view kReduceKernels = R"(typedef $OP $NAME_op;
typedef $NAME_op::acc $NAME_acc;
static_assert(sizeof($NAME_acc) == $ACCBYTES, "the partial accumulators the host allocates");
// Element i of the run `stride` apart from p, as the accumulator's value type.
struct $NAME_load {
  const $STORE* p;
  long long stride;
  __device__ __forceinline__ $NAME_op::value operator()(long long i) const {
    return $LOAD(p[i * stride]);
  }
};
static __device__ __forceinline__ long long $NAME_offset(const long long* sizes,
                                                     const long long* strides, long long rank,
                                                     long long index) {
  long long off = 0;
  for (long long d = rank - 1; d >= 0; --d) {
    off += (index % sizes[d]) * strides[d];
    index /= sizes[d];
  }
  return off;
}
// Output o's first element.
static __device__ __forceinline__ const $STORE* $NAME_row(const sf_reduce_args& a, long long o) {
  return (const $STORE*)a.in + $NAME_offset(a.kept_sizes, a.kept_strides, a.kept_rank, o);
}
// The load of the run `offset` elements into output o's data (sf_reduce_block's LoadAt).
struct $NAME_load_at {
  const $STORE* row;
  long long stride;
  __device__ __forceinline__ $NAME_load operator()(long long offset) const {
    const $NAME_load load = {row + offset, stride};
    return load;
  }
};
// Block b of output o's reduction, from the identity, run by run over the reduced dimensions.
static __device__ __forceinline__ $NAME_acc $NAME_block(const sf_reduce_args& a,
                                                        const $STORE* row, long long b) {
  const $NAME_load_at load_at = {row, a.reduced_strides[a.reduced_rank - 1]};
  return sf_reduce_block<$NAME_op>(load_at, (int)a.reduced_rank, a.reduced_sizes,
                                   a.reduced_strides, a.len, b);
}
static __device__ __forceinline__ void $NAME_store(const sf_reduce_args& a, long long o,
                                                   $NAME_acc acc) {
  (($OUTSTORE*)a.out)[o] = $FINISH;
}
// A thread per output: its blocks one after the other.
extern "C" __global__ void __launch_bounds__($BLOCK) $NAME_rows(const sf_reduce_args a) {
  for (long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x; o < a.outputs;
       o += (long long)gridDim.x * blockDim.x) {
    const $STORE* row = $NAME_row(a, o);
    $NAME_acc acc = $NAME_op::identity();
    for (long long b = 0; b < a.blocks; ++b) acc = $NAME_op::merge(acc, $NAME_block(a, row, b));
    $NAME_store(a, o, acc);
  }
}
// A thread per output, block and slot, writing partial[(o * blocks + b) * slots + slot]: with one
// slot the block's accumulator; with SF_REDUCE_LANES slots (one contiguous run) lane `slot` of
// the block (sf_reduce_lane), or in slot 0 the whole block where it is too short for lanes.
extern "C" __global__ void __launch_bounds__($BLOCK) $NAME_parts(const sf_reduce_args a) {
  const long long items = a.outputs * a.blocks * a.slots;
  for (long long w = (long long)blockIdx.x * blockDim.x + threadIdx.x; w < items;
       w += (long long)gridDim.x * blockDim.x) {
    const long long slot = w % a.slots, b = w / a.slots % a.blocks, o = w / a.slots / a.blocks;
    const $STORE* row = $NAME_row(a, o);
    $NAME_acc* part = ($NAME_acc*)a.partial + w;
    const long long span =
        a.slots == 1 ? 0 : sf_reduce_lane_span(1, sf_reduce_block_len(a.len, b));
    if (span) {
      const long long start = b * SF_REDUCE_BLOCK;
      const $NAME_load load = {row + start, 1};
      *part = sf_reduce_lane<$NAME_op>(load, 0, span, start, (int)slot);
    } else if (slot == 0) {
      *part = $NAME_block(a, row, b);
    }
  }
}
// A thread per output: its blocks' parts merged in order (a block's lanes first merged, and its
// tail folded, as sf_reduce_run does).
extern "C" __global__ void __launch_bounds__($BLOCK) $NAME_combine(const sf_reduce_args a) {
  for (long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x; o < a.outputs;
       o += (long long)gridDim.x * blockDim.x) {
    const $NAME_acc* parts = (const $NAME_acc*)a.partial + o * a.blocks * a.slots;
    const $STORE* row = $NAME_row(a, o);
    $NAME_acc acc = $NAME_op::identity();
    for (long long b = 0; b < a.blocks; ++b) {
      const $NAME_acc* lanes = parts + b * a.slots;
      const long long n = sf_reduce_block_len(a.len, b);
      const long long span = a.slots == 1 ? 0 : sf_reduce_lane_span(1, n);
      $NAME_acc block = lanes[0];
      if (span) {
        block = $NAME_op::identity();
        for (int l = 0; l < SF_REDUCE_LANES; ++l) block = $NAME_op::merge(block, lanes[l]);
        const long long start = b * SF_REDUCE_BLOCK;
        const $NAME_load load = {row + start, 1};
        block = sf_reduce_tail<$NAME_op>(load, 0, span, n, start, block);
      }
      acc = $NAME_op::merge(acc, block);
    }
    $NAME_store(a, o, acc);
  }
}
)";

// The accumulator of a reduction over `in` (reduce.cpp's SumOp, ExtremeOp and ArgmaxOp).
std::string accumulator(core::OpKind kind, DType in) {
  if (in == kF64) return reduce_op_type(kind, ValueType::kF64);
  const std::string v = c_type(value_type_of(in));  // an integer value type
  switch (kind) {
    case core::OpKind::kSum:
    case core::OpKind::kMean:
      return float_storage(in) ? "sf_sum_float" : "sf_sum_int";
    case core::OpKind::kMax:
    case core::OpKind::kMin: {
      const std::string max = kind == core::OpKind::kMax ? "1" : "0";
      return float_storage(in) ? "sf_extreme_float<" + max + ">"
                               : "sf_extreme_int<" + v + ", " + max + ">";
    }
    case core::OpKind::kArgmax:
      return float_storage(in) ? "sf_argmax_float" : "sf_argmax_int<" + v + ">";
    default:
      throw Error("internal error: " + std::string(core::op_name(kind)) +
                  " is not a reduction; please report this");
  }
}

}  // namespace

std::size_t cuda_reduce_accumulator_bytes(core::OpKind kind, DType in) {
  switch (kind) {
    case core::OpKind::kSum:
    case core::OpKind::kMean:
      return 8;  // double or long long
    case core::OpKind::kArgmax:
      return 16;  // value, then index (padded)
    default:      // the value type's (i8 and u8 are read as int)
      return element_size(storage_dtype_of(value_type_of(in)));
  }
}

std::string cuda_reduce_source(core::OpKind kind, DType in, DType out, const std::string& name) {
  const std::string op = accumulator(kind, in);
  // What the accumulator's values are read as: float for float storage, double for f64, else
  // the integer type (64 bits for sums).
  const bool fl = float_storage(in), f64 = in == kF64;
  const bool sums = kind == core::OpKind::kSum || kind == core::OpKind::kMean;
  const ValueType value = fl     ? ValueType::kFloat
                          : f64  ? ValueType::kF64
                          : sums ? ValueType::kI64
                                 : value_type_of(in);
  std::string finish;
  switch (kind) {
    case core::OpKind::kSum:  // a float sum rounds its double to float first, as the CPU does
      finish = fl    ? store_value("(float)acc", ValueType::kFloat, out)
               : f64 ? store_value("acc", ValueType::kF64, out)
                     : store_value("acc", ValueType::kI64, out);
      break;
    case core::OpKind::kMean:  // sf_reduce_results' mean
      finish = f64 ? store_value("acc / (double)a.len", ValueType::kF64, out)
                   : store_value("(float)((double)acc / (double)a.len)", ValueType::kFloat, out);
      break;
    case core::OpKind::kArgmax:
      finish = "acc.index";
      break;
    default:
      finish = store_value("acc", value, out);
  }
  const std::string load_macro =
      "#define " + name + "_LOAD(e) (" + load_value("(e)", in, value) + ")\n";
  return "// " + name + ": " + std::string(core::op_name(kind)) + " of " +
         std::string(dtype_name(in)) + " into " + std::string(dtype_name(out)) + "\n" +
         std::string(kReduceArgs) + load_macro +
         fill(std::string(kReduceKernels),
              {{"$OUTSTORE", storage_c_type(out)},
               {"$STORE", storage_c_type(in)},
               {"$LOAD", name + "_LOAD"},
               {"$FINISH", finish},
               {"$OP", op},
               {"$ACCBYTES", std::to_string(cuda_reduce_accumulator_bytes(kind, in))},
               {"$BLOCK", std::to_string(kCudaBlockSize)},
               {"$NAME", name}});
}

std::string cuda_arange_source(DType out, bool integral, const std::string& name) {
  const std::string value =
      integral ? store_value(
                     "(long long)((unsigned long long)a.start_i + (unsigned long long)i * "
                     "(unsigned long long)a.step_i)",
                     ValueType::kI64, out)
      : out == kF64
          ? store_value("(a.start_d + (double)i * a.step_d)", ValueType::kF64, out)
          : store_value("(float)(a.start_d + (double)i * a.step_d)", ValueType::kFloat, out);
  return fill(R"(// $NAME: arange into $DTYPE
struct $NAME_args {
  char* out;
  long long numel, start_i, step_i;
  double start_d, step_d;
};
extern "C" __global__ void __launch_bounds__($BLOCK) $NAME(const $NAME_args a) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < a.numel;
       i += (long long)gridDim.x * blockDim.x)
    (($T*)a.out)[i] = $VALUE;
}
)",
              {{"$NAME", name},
               {"$DTYPE", std::string(dtype_name(out))},
               {"$BLOCK", std::to_string(kCudaBlockSize)},
               {"$T", storage_c_type(out)},
               {"$VALUE", value}});
}

std::string cuda_random_source(core::OpKind kind, DType out, const std::string& name) {
  if (!is_floating(out))
    throw Error("internal error: random values of " + std::string(dtype_name(out)));
  const bool uniform = kind == core::OpKind::kRandUniform;
  // Stores value v of lane l (f64: widened, as backends/cpu/kernels/random.cpp does); 16-bit
  // uniform values that round up to the open bound step back.
  std::string store = "(($T*)a.out)[i] = " + store_value("v", ValueType::kFloat, out) + ";";
  if (uniform && (out == kF16 || out == kBF16)) {
    const std::string back = out == kF16 ? "sf_half_to_float" : "sf_bf16_to_float";
    store = "unsigned short h = " + store_value("v", ValueType::kFloat, out) + ";\n      if (" +
            back + "(h) >= b) h = (unsigned short)(h - 1);\n      (($T*)a.out)[i] = h;";
  }
  const std::string values =
      uniform ? "    for (int j = 0; j < 4; ++j) values[j] = lo + $NAME_unit(w[j]) * (b - lo);\n"
              : "    for (int p = 0; p < 2; ++p) {\n"
                "      const float u1 = (float)((w[2 * p] >> 8) + 1) * 0x1p-24f;\n"
                "      const float u2 = $NAME_unit(w[2 * p + 1]);\n"
                "      const float radius = sf_sqrt(-2.0f * sf_log(u1));\n"
                "      const float angle = 6.2831853071795864769f * u2;\n"
                "      values[2 * p] = lo + b * radius * sf_cos(angle);\n"
                "      values[2 * p + 1] = lo + b * radius * sf_sin(angle);\n"
                "    }\n";
  return fill(R"(// $NAME: $KIND into $DTYPE (Philox4x32-10, as backends/cpu/kernels/random.cpp)
struct $NAME_args {
  char* out;
  long long numel;
  unsigned long long seed, offset;
  double a, b;
};
static __device__ __forceinline__ void $NAME_philox(unsigned long long counter,
                                                    unsigned long long seed, unsigned int* w) {
  unsigned int c0 = (unsigned int)counter, c1 = (unsigned int)(counter >> 32), c2 = 0, c3 = 0;
  unsigned int k0 = (unsigned int)seed, k1 = (unsigned int)(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const unsigned long long p0 = 0xD2511F53ull * c0;
    const unsigned long long p1 = 0xCD9E8D57ull * c2;
    const unsigned int n0 = (unsigned int)(p1 >> 32) ^ c1 ^ k0;
    const unsigned int n2 = (unsigned int)(p0 >> 32) ^ c3 ^ k1;
    c0 = n0;
    c1 = (unsigned int)p1;
    c2 = n2;
    c3 = (unsigned int)p0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  w[0] = c0, w[1] = c1, w[2] = c2, w[3] = c3;
}
static __device__ __forceinline__ float $NAME_unit(unsigned int w) {
  return (float)(w >> 8) * 0x1p-24f;
}
extern "C" __global__ void __launch_bounds__($BLOCK) $NAME(const $NAME_args a) {
  const float lo = (float)a.a, b = (float)a.b;
  const long long counters = (a.numel + 3) / 4;
  for (long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x; c < counters;
       c += (long long)gridDim.x * blockDim.x) {
    unsigned int w[4];
    $NAME_philox(a.offset + (unsigned long long)c, a.seed, w);
    float values[4];
$VALUES    for (int l = 0; l < 4; ++l) {
      const long long i = c * 4 + l;
      if (i >= a.numel) break;
      const float v = values[l];
      $STORE
    }
  }
}
)",
              {{"$VALUES", values},
               {"$STORE", store},
               {"$KIND", std::string(core::op_name(kind))},
               {"$DTYPE", std::string(dtype_name(out))},
               {"$BLOCK", std::to_string(kCudaBlockSize)},
               {"$T", storage_c_type(out)},
               {"$NAME", name}});
}

std::string cuda_int_matmul_source(DType dtype, const std::string& name) {
  if (!is_integral(dtype) && dtype != kF64)
    throw Error("internal error: a looped matmul of " + std::string(dtype_name(dtype)));
  // Sums in the value type (int for i8 and u8: the sum of products modulo 2^32, wrapped to 8
  // bits when stored, as the CPU's 8-bit product computes it modulo 256).
  const ValueType acc = value_type_of(dtype);
  return fill(
      R"(// $NAME: matmul of $DTYPE (integers wrap), one thread per output
struct $NAME_args {
  const char* a;
  const char* b;
  char* out;
  long long batch_rank, batch[8], a_batch_strides[8], b_batch_strides[8];
  long long m, k, n;
  long long a_row_stride, a_col_stride, b_row_stride, b_col_stride;
};
extern "C" __global__ void __launch_bounds__($BLOCK) $NAME(const $NAME_args a) {
  long long matrices = 1;
  for (long long d = 0; d < a.batch_rank; ++d) matrices *= a.batch[d];
  const long long total = matrices * a.m * a.n;
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < total;
       e += (long long)gridDim.x * blockDim.x) {
    const long long j = e % a.n, i = e / a.n % a.m;
    long long index = e / (a.m * a.n), ao = 0, bo = 0;
    for (long long d = a.batch_rank - 1; d >= 0; --d) {
      const long long at = index % a.batch[d];
      index /= a.batch[d];
      ao += at * a.a_batch_strides[d];
      bo += at * a.b_batch_strides[d];
    }
    const $T* x = (const $T*)a.a + ao + i * a.a_row_stride;
    const $T* y = (const $T*)a.b + bo + j * a.b_col_stride;
    $ACC sum = 0;
    for (long long p = 0; p < a.k; ++p)
      sum = $MAC;
    (($T*)a.out)[e] = $STORE;
  }
}
)",
      {{"$NAME", name},
       {"$DTYPE", std::string(dtype_name(dtype))},
       {"$BLOCK", std::to_string(kCudaBlockSize)},
       {"$STORE", store_value("sum", acc, dtype)},
       {"$MAC", dtype == kF64 ? std::string("sum + x[p * a.a_col_stride] * y[p * a.b_row_stride]")
                              : "sf_add(sum, sf_mul(($ACC)x[p * a.a_col_stride], "
                                "($ACC)y[p * a.b_row_stride]))"},
       {"$ACC", c_type(acc)},
       {"$T", storage_c_type(dtype)}});
}

std::string cuda_index_source(core::OpKind kind, std::size_t element_bytes, DType index_dtype,
                              const std::string& name) {
  const char* element = element_bytes == 1   ? "unsigned char"
                        : element_bytes == 2 ? "unsigned short"
                        : element_bytes == 4 ? "unsigned int"
                                             : "unsigned long long";
  const std::string source = kind == core::OpKind::kIndexSelect ? R"(
    const long long e = i % a.inner, r = i / a.inner;
    const long long j = r % a.count, o = r / a.count;
    const long long v = (long long)(($I*)a.indices)[j];
    if (v < 0 || v >= a.axis_size) {
      *a.bad = 1;
      continue;
    }
    (($E*)a.out)[i] = ((const $E*)a.x)[(o * a.axis_size + v) * a.inner + e];)"
                                                                : R"(
    const long long v = (long long)(($I*)a.indices)[i];
    if (v < 0 || v >= a.axis_size) {
      *a.bad = 1;
      continue;
    }
    long long from = 0, rest = i;
    for (long long d = a.rank - 1; d >= 0; --d) {
      const long long c = rest % a.sizes[d];
      rest /= a.sizes[d];
      from += (d == a.axis ? v : c) * a.x_strides[d];
    }
    (($E*)a.out)[i] = ((const $E*)a.x)[from];)";
  return fill(R"(// $NAME: $KIND of $BYTES-byte elements by $IDX indices
struct $NAME_args {
  const char* x;
  const char* indices;
  char* out;
  int* bad;
  long long numel;
  long long outer, axis_size, count, inner;
  long long rank, axis, sizes[8], x_strides[8];
};
extern "C" __global__ void __launch_bounds__($BLOCK) $NAME(const $NAME_args a) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < a.numel;
       i += (long long)gridDim.x * blockDim.x) {$BODY
  }
}
)",
              {{"$BODY", source},
               {"$NAME", name},
               {"$KIND", std::string(core::op_name(kind))},
               {"$BYTES", std::to_string(element_bytes)},
               {"$IDX", std::string(dtype_name(index_dtype))},
               {"$BLOCK", std::to_string(kCudaBlockSize)},
               {"$E", element},
               {"$I", index_dtype == kI32 ? "int" : "long long"}});
}

std::string cuda_scan_source(core::OpKind kind, DType in, DType out, const std::string& name) {
  const bool floating = is_floating(in);
  const std::string element = std::string("((const ") + storage_c_type(in) + "*)a.x)[e]";
  const std::string key = floating ? load_value(element, in, ValueType::kF64)  // exact
                                   : load_value(element, in, ValueType::kI64);
  const std::string body = kind == core::OpKind::kCumsum ? (floating ? R"(
    double acc = 0;
    for (long long k = 0; k < a.size; ++k) {
      const long long e = first + k * a.inner;
      acc += $KEY;
      (($OUT*)a.out)[e] = $STORE;
    })"
                                                                     : R"(
    unsigned long long acc = 0;  // wrapping
    for (long long k = 0; k < a.size; ++k) {
      const long long e = first + k * a.inner;
      acc += (unsigned long long)($KEY);
      ((long long*)a.out)[e] = (long long)acc;
    })")
                                                         : R"(
    long long* src = a.a + line * a.size;
    long long* dst = a.b + line * a.size;
    for (long long k = 0; k < a.size; ++k) src[k] = k;
    for (long long width = 1; width < a.size; width *= 2) {
      for (long long lo = 0; lo < a.size; lo += 2 * width) {
        const long long mid = lo + width < a.size ? lo + width : a.size;
        const long long hi = lo + 2 * width < a.size ? lo + 2 * width : a.size;
        long long i = lo, j = mid, k = lo;
        while (i < mid && j < hi) {
          const $KEYT left = $NAME_key(a, first, src[i]), right = $NAME_key(a, first, src[j]);
          // Stable: the right one first only when it sorts strictly before the left one.
          const bool right_first = a.descending ? $NAME_before(left, right) : $NAME_before(right, left);
          dst[k++] = right_first ? src[j++] : src[i++];
        }
        while (i < mid) dst[k++] = src[i++];
        while (j < hi) dst[k++] = src[j++];
      }
      long long* t = src;
      src = dst;
      dst = t;
    }
    for (long long k = 0; k < a.size; ++k) ((long long*)a.out)[first + k * a.inner] = src[k];)";
  return fill(R"(// $NAME: $KIND of $IN into $OUTDT
struct $NAME_args {
  const char* x;
  char* out;
  long long* a;
  long long* b;
  long long outer, size, inner;
  long long descending;
};
__device__ __forceinline__ $KEYT $NAME_key(const $NAME_args& a, long long first, long long k) {
  const long long e = first + k * a.inner;
  return $KEY;
}
// NaN after every number; -0 equal to +0 (backends/scan_layout.h's sorts_before).
__device__ __forceinline__ bool $NAME_before($KEYT p, $KEYT q) { return $BEFORE; }
extern "C" __global__ void __launch_bounds__($BLOCK) $NAME(const $NAME_args a) {
  for (long long line = (long long)blockIdx.x * blockDim.x + threadIdx.x;
       line < a.outer * a.inner; line += (long long)gridDim.x * blockDim.x) {
    const long long first = line / a.inner * a.size * a.inner + line % a.inner;$BODY
  }
}
)",
              {{"$BODY", body},
               // A float dtype's prefix rounds through float, as the CPU's; f64's is the double.
               {"$STORE", out == kF64 ? std::string("acc")
                                      : store_value("(float)acc", ValueType::kFloat, out)},
               {"$BEFORE", floating ? "p == p && (q != q || p < q)" : "p < q"},
               {"$KEYT", floating ? "double" : "long long"},
               {"$KEY", key},
               {"$OUTDT", std::string(dtype_name(out))},
               {"$OUT", storage_c_type(out)},
               {"$IN", std::string(dtype_name(in))},
               {"$KIND", std::string(core::op_name(kind))},
               {"$NAME", name},
               {"$BLOCK", std::to_string(kCudaBlockSize)}});
}

std::string cuda_scatter_source(core::OpKind kind, DType dtype, DType index_dtype,
                                const std::string& name) {
  const std::string to = "((" + std::string(storage_c_type(dtype)) + "*)a.out)[at]";
  const std::string from = "((const " + std::string(storage_c_type(dtype)) + "*)a.src)[s]";
  std::string write;
  if (kind == OpKind::kScatter) {
    write = to + " = " + from + ";";
  } else if (is_floating(dtype)) {
    // Through the dtype's value type, rounded at each step as the CPU's loop does.
    const ValueType vt = value_type_of(dtype);
    write =
        to + " = " +
        store_value(load_value(to, dtype, vt) + " + " + load_value(from, dtype, vt), vt, dtype) +
        ";";
  } else {  // integers wrap
    write =
        to + " = " +
        store_value("(long long)((unsigned long long)" + load_value(to, dtype, ValueType::kI64) +
                        " + (unsigned long long)" + load_value(from, dtype, ValueType::kI64) + ")",
                    ValueType::kI64, dtype) +
        ";";
  }
  return fill(R"(// $NAME: $KIND of $DT by $IDX indices
struct $NAME_args {
  const char* index;
  const char* src;
  char* out;
  int* bad;
  long long lines, line_size, rank, axis, axis_size;
  long long index_sizes[8], index_strides[8], src_strides[8], out_strides[8];
};
extern "C" __global__ void __launch_bounds__($BLOCK) $NAME(const $NAME_args a) {
  for (long long line = (long long)blockIdx.x * blockDim.x + threadIdx.x; line < a.lines;
       line += (long long)gridDim.x * blockDim.x) {
    long long i0 = 0, s0 = 0, o0 = 0, rest = line;
    for (long long d = a.rank - 1; d >= 0; --d) {
      if (d == a.axis) continue;
      const long long c = rest % a.index_sizes[d];
      rest /= a.index_sizes[d];
      i0 += c * a.index_strides[d];
      s0 += c * a.src_strides[d];
      o0 += c * a.out_strides[d];
    }
    for (long long j = 0; j < a.line_size; ++j) {
      const long long v = (long long)(($ITYPE*)a.index)[i0 + j * a.index_strides[a.axis]];
      if (v < 0 || v >= a.axis_size) {
        *a.bad = 1;
        continue;
      }
      const long long at = o0 + v * a.out_strides[a.axis];
      const long long s = s0 + j * a.src_strides[a.axis];
      $WRITE
    }
  }
}
)",
              {{"$WRITE", write},
               {"$NAME", name},
               {"$KIND", std::string(core::op_name(kind))},
               {"$DT", std::string(dtype_name(dtype))},
               {"$IDX", std::string(dtype_name(index_dtype))},
               {"$BLOCK", std::to_string(kCudaBlockSize)},
               {"$ITYPE", index_dtype == kI32 ? "const int" : "const long long"}});
}

std::string cuda_window_source(core::OpKind kind, DType dtype, const std::string& name) {
  if (!float_storage(dtype))
    throw CompileError("jit: " + std::string(core::op_name(kind)) + " of " +
                       std::string(dtype_name(dtype)) + ": window ops take float dtypes");
  const std::string x =
      load_value("((const $T*)a.x)[xplane + ih * a.w_size + iw]", dtype, ValueType::kFloat);
  std::string body;
  if (kind == OpKind::kConv2d) {
    body = R"(
    const long long per_group = a.o / a.groups, cg = a.c / a.groups, g = oc / per_group;
    float acc = 0;
    for (long long ci = 0; ci < cg; ++ci) {
      const long long xplane = (n * a.c + g * cg + ci) * a.h * a.w_size;
      const long long wplane = (oc * cg + ci) * a.kh * a.kw;
      for (long long kh = 0; kh < a.kh; ++kh) {
        const long long ih = h0 + kh * a.dh;
        if (ih < 0 || ih >= a.h) continue;
        for (long long kw = 0; kw < a.kw; ++kw) {
          const long long iw = w0 + kw * a.dw;
          if (iw < 0 || iw >= a.w_size) continue;
          acc += $LOADX * $LOADW;
        }
      }
    }
    (($T*)a.out)[i] = $STORE;)";
  } else if (kind == OpKind::kMaxPool2d) {
    body = R"(
    const long long xplane = (n * a.c + oc) * a.h * a.w_size;
    float best = SF_MATH_AS_FLOAT(0xff800000u);  // -inf
    for (long long kh = 0; kh < a.kh; ++kh) {
      const long long ih = h0 + kh * a.dh;
      if (ih < 0 || ih >= a.h) continue;
      for (long long kw = 0; kw < a.kw; ++kw) {
        const long long iw = w0 + kw * a.dw;
        if (iw < 0 || iw >= a.w_size) continue;
        const float v = $LOADX;
        if (v > best || v != v) best = v;  // a NaN wins (the last one), as on the CPU
      }
    }
    const float acc = best;
    (($T*)a.out)[i] = $STORE;)";
  } else {
    body = R"(
    const long long xplane = (n * a.c + oc) * a.h * a.w_size;
    const long long h1 = h0 + a.kh < a.h + a.ph ? h0 + a.kh : a.h + a.ph;
    const long long w1 = w0 + a.kw < a.w_size + a.pw ? w0 + a.kw : a.w_size + a.pw;
    const long long padded = (h1 - h0) * (w1 - w0);
    const long long hs = h0 > 0 ? h0 : 0, he = h1 < a.h ? h1 : a.h;
    const long long ws = w0 > 0 ? w0 : 0, we = w1 < a.w_size ? w1 : a.w_size;
    float sum = 0;
    for (long long ih = hs; ih < he; ++ih)
      for (long long iw = ws; iw < we; ++iw) sum += $LOADX;
    const long long count = a.count_include_pad ? padded : (he - hs) * (we - ws);
    const float acc = sum / (float)count;
    (($T*)a.out)[i] = $STORE;)";
  }
  return fill(R"(// $NAME: $KIND of $DT
struct $NAME_args {
  const char* x;
  const char* w;
  char* out;
  long long numel;
  long long n, c, h, w_size, o, oh, ow;
  long long kh, kw, sh, sw, ph, pw, dh, dw, groups, count_include_pad;
};
extern "C" __global__ void __launch_bounds__($BLOCK) $NAME(const $NAME_args a) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < a.numel;
       i += (long long)gridDim.x * blockDim.x) {
    const long long ow = i % a.ow, oh = i / a.ow % a.oh, oc = i / (a.ow * a.oh) % a.o;
    const long long n = i / (a.ow * a.oh * a.o);
    const long long h0 = oh * a.sh - a.ph, w0 = ow * a.sw - a.pw;$BODY
  }
}
)",
              {{"$BODY", body},
               {"$LOADX", x},
               {"$LOADW",
                load_value("((const $T*)a.w)[wplane + kh * a.kw + kw]", dtype, ValueType::kFloat)},
               {"$STORE", store_value("acc", ValueType::kFloat, dtype)},
               {"$T", storage_c_type(dtype)},
               {"$DT", std::string(dtype_name(dtype))},
               {"$KIND", std::string(core::op_name(kind))},
               {"$NAME", name},
               {"$BLOCK", std::to_string(kCudaBlockSize)}});
}

}  // namespace streamfuse::jit
