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

bool float_storage(DType d) { return d == kF32 || d == kF16 || d == kBF16; }

// The device declarations of the host structs in cuda_library_source.h, field for field.
constexpr std::string_view kReduceArgs = R"(struct sf_reduce_args {
  const char* in;
  char* out;
  char* partial;
  long long kept_rank, kept_sizes[8], kept_strides[8];
  long long reduced_rank, reduced_sizes[8], reduced_strides[8];
  long long outputs, len, splits;
};
)";

// Reduction kernels over accumulator type ACC: IDENTITY, STEP(acc, x, r) with x the element
// loaded as LOADT, MERGE(a, b), and FINISH(acc) storing to OUT.
constexpr std::string_view kReduceKernels = R"(
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
static __device__ __forceinline__ $ACC $NAME_fold(const sf_reduce_args& a, long long o,
                                                  long long first, long long step) {
  const $STORE* base = (const $STORE*)a.in + $NAME_offset(a.kept_sizes, a.kept_strides,
                                                          a.kept_rank, o);
  $ACC acc = $IDENTITY;
  if (a.reduced_rank == 1) {
    const long long s = a.reduced_strides[0];
    for (long long r = first; r < a.len; r += step) {
      const $LOADT x = $LOAD(base[r * s]);
      acc = $STEP;
    }
  } else {
    for (long long r = first; r < a.len; r += step) {
      const $LOADT x = $LOAD(base[$NAME_offset(a.reduced_sizes, a.reduced_strides,
                                               a.reduced_rank, r)]);
      acc = $STEP;
    }
  }
  return acc;
}
static __device__ __forceinline__ void $NAME_store(const sf_reduce_args& a, long long o,
                                                   $ACC acc) {
  (($OUTSTORE*)a.out)[o] = $FINISH;
}
// Folds the block's accumulators in shared memory; thread 0 returns the result.
static __device__ __forceinline__ $ACC $NAME_tree($ACC acc) {
  __shared__ $ACC buf[$BLOCK];
  buf[threadIdx.x] = acc;
  __syncthreads();
  for (unsigned width = $BLOCK / 2; width > 0; width /= 2) {
    if (threadIdx.x < width) {
      const $ACC a = buf[threadIdx.x], b = buf[threadIdx.x + width];
      buf[threadIdx.x] = $MERGE;
    }
    __syncthreads();
  }
  return buf[0];
}
extern "C" __global__ void __launch_bounds__($BLOCK) $NAME_rows(const sf_reduce_args a) {
  for (long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x; o < a.outputs;
       o += (long long)gridDim.x * blockDim.x)
    $NAME_store(a, o, $NAME_fold(a, o, 0, 1));
}
extern "C" __global__ void __launch_bounds__($BLOCK) $NAME_split(const sf_reduce_args a) {
  const long long o = blockIdx.x / a.splits, split = blockIdx.x % a.splits;
  const $ACC acc = $NAME_tree($NAME_fold(a, o, split * $BLOCK + threadIdx.x, a.splits * $BLOCK));
  if (threadIdx.x != 0) return;
  if (a.splits == 1)
    $NAME_store(a, o, acc);
  else
    (($ACC*)a.partial)[blockIdx.x] = acc;
}
extern "C" __global__ void __launch_bounds__($BLOCK) $NAME_combine(const sf_reduce_args a) {
  const $ACC* parts = (const $ACC*)a.partial + (long long)blockIdx.x * a.splits;
  $ACC acc = $IDENTITY;
  for (long long s = threadIdx.x; s < a.splits; s += $BLOCK) {
    const $ACC a = acc, b = parts[s];  // as in the tree (shadows the arguments here)
    acc = $MERGE;
  }
  acc = $NAME_tree(acc);
  if (threadIdx.x == 0) $NAME_store(a, blockIdx.x, acc);
}
)";

std::string limits_low(DType d) {
  switch (d) {
    case kI32:
      return "(-2147483647 - 1)";
    case kI64:
      return "(-9223372036854775807LL - 1)";
    case kBool:
      return "(unsigned char)0";
    default:
      return "SF_MATH_AS_FLOAT(0xff800000u)";  // -inf
  }
}
std::string limits_high(DType d) {
  switch (d) {
    case kI32:
      return "2147483647";
    case kI64:
      return "9223372036854775807LL";
    case kBool:
      return "(unsigned char)1";
    default:
      return "SF_MATH_AS_FLOAT(0x7f800000u)";  // +inf
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
    default:
      return element_size(float_storage(in) ? kF32 : in);
  }
}

std::string cuda_reduce_source(core::OpKind kind, DType in, DType out, const std::string& name) {
  const bool fl = float_storage(in);
  const ValueType vt = fl ? ValueType::kFloat : value_type_of(in);
  const std::string v = c_type(vt);  // the type max/min/argmax compare in
  std::string acc, identity, load_type, step, merge, finish, prefix;
  auto load = [&](ValueType as) { return load_value("$$X", in, as); };
  std::string load_expr;
  switch (kind) {
    case core::OpKind::kSum:
    case core::OpKind::kMean: {
      acc = fl ? "double" : "long long";
      identity = fl ? "0.0" : "0LL";
      load_type = fl ? "double" : "long long";
      load_expr = fl ? "(double)" + load(ValueType::kFloat) : load(ValueType::kI64);
      step = fl ? "acc + x" : "sf_add(acc, x)";
      merge = fl ? "a + b" : "sf_add(a, b)";
      // Mean: the sum over the count, rounded to float first as the CPU does.
      const std::string value = kind == core::OpKind::kMean ? "(float)((double)acc / (double)a.len)"
                                                            : (fl ? "(float)acc" : "acc");
      finish = store_value(
          value, kind == core::OpKind::kMean || fl ? ValueType::kFloat : ValueType::kI64, out);
      break;
    }
    case core::OpKind::kMax:
    case core::OpKind::kMin: {
      const bool max = kind == core::OpKind::kMax;
      acc = v;
      identity = max ? limits_low(in) : limits_high(in);
      load_type = v;
      load_expr = load(vt);
      step = max ? "sf_max(acc, x)" : "sf_min(acc, x)";  // float: NaN wins, as on the CPU
      merge = max ? "sf_max(a, b)" : "sf_min(a, b)";
      finish = store_value("acc", vt, out);
      break;
    }
    case core::OpKind::kArgmax: {
      acc = name + "_acc";
      // The first index of the largest value; NaN counts as largest (the first NaN wins).
      prefix = "struct " + acc + " {\n  " + v + " value;\n  long long index;\n};\n" +
               "static __device__ __forceinline__ bool " + name + "_greater(" + v + " a, " + v +
               " b) {\n  return " + (fl ? "(a != a && b == b) || a > b" : "a > b") + ";\n}\n" +
               "static __device__ __forceinline__ " + acc + " " + name + "_merge(" + acc + " a, " +
               acc + " b) {\n  if (" + name + "_greater(b.value, a.value)) return b;\n  if (" +
               name +
               "_greater(a.value, b.value)) return a;\n  return b.index < a.index ? b : a;\n}\n";
      identity = acc + "{" + limits_low(in) + ", 9223372036854775807LL}";
      load_type = v;
      load_expr = load(vt);
      step = name + "_merge(acc, " + acc + "{x, r})";
      merge = name + "_merge(a, b)";
      finish = "acc.index";
      break;
    }
    default:
      throw Error("internal error: " + std::string(core::op_name(kind)) +
                  " is not a reduction; please report this");
  }
  // $LOAD(e) is a macro-like template: the element expression replaces $$X.
  const std::string load_macro =
      "#define " + name + "_LOAD(e) (" + fill(load_expr, {{"$$X", "(e)"}}) + ")\n";
  const std::string kernels(kReduceKernels);
  return "// " + name + ": " + std::string(core::op_name(kind)) + " of " +
         std::string(dtype_name(in)) + " into " + std::string(dtype_name(out)) + "\n" +
         std::string(kReduceArgs) + prefix + load_macro +
         fill(kernels, {{"$OUTSTORE", storage_c_type(out)},
                        {"$STORE", storage_c_type(in)},
                        {"$LOADT", load_type},
                        {"$LOAD", name + "_LOAD"},
                        {"$IDENTITY", identity},
                        {"$STEP", step},
                        {"$MERGE", merge},
                        {"$FINISH", finish},
                        {"$ACC", acc},
                        {"$BLOCK", std::to_string(kCudaBlockSize)},
                        {"$NAME", name}});
}

std::string cuda_arange_source(DType out, bool integral, const std::string& name) {
  const std::string value =
      integral ? store_value(
                     "(long long)((unsigned long long)a.start_i + (unsigned long long)i * "
                     "(unsigned long long)a.step_i)",
                     ValueType::kI64, out)
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
  if (!float_storage(out))
    throw Error("internal error: random values of " + std::string(dtype_name(out)));
  const bool uniform = kind == core::OpKind::kRandUniform;
  // Stores value v of lane l; 16-bit uniform values that round up to the open bound step back.
  std::string store = "(($T*)a.out)[i] = " + store_value("v", ValueType::kFloat, out) + ";";
  if (uniform && out != kF32) {
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
  if (dtype != kI32 && dtype != kI64)
    throw Error("internal error: an integer matmul of " + std::string(dtype_name(dtype)));
  return fill(R"(// $NAME: matmul of $DTYPE, wrapping
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
    $T sum = 0;
    for (long long p = 0; p < a.k; ++p)
      sum = sf_add(sum, sf_mul(x[p * a.a_col_stride], y[p * a.b_row_stride]));
    (($T*)a.out)[e] = sum;
  }
}
)",
              {{"$NAME", name},
               {"$DTYPE", std::string(dtype_name(dtype))},
               {"$BLOCK", std::to_string(kCudaBlockSize)},
               {"$T", storage_c_type(dtype)}});
}

}  // namespace streamfuse::jit
