#include "tests/differential/random_program.h"

#include <bit>
#include <cmath>
#include <sstream>

namespace streamfuse::testing {
namespace {

constexpr DType kDtypes[] = {kF32, kF32, kF32, kF16, kBF16, kI32, kI64, kBool, kI8, kU8, kF64};

using Unary = Tensor (*)(Tensor);
const Unary kUnary[] = {neg, abs, exp,  log, sqrt,    rsqrt, recip,
                        sin, cos, tanh, erf, sigmoid, relu,  logical_not};
constexpr int kNumUnary = sizeof(kUnary) / sizeof(kUnary[0]);

Tensor binary(int op, Tensor a, Tensor b) {
  switch (op) {
    case 0:
      return std::move(a) + std::move(b);
    case 1:
      return std::move(a) - std::move(b);
    case 2:
      return std::move(a) * std::move(b);
    case 3:
      return std::move(a) / std::move(b);
    case 4:
      return pow(std::move(a), std::move(b));
    case 5:
      return maximum(std::move(a), std::move(b));
    case 6:
      return minimum(std::move(a), std::move(b));
    case 7:
      return std::move(a) == std::move(b);
    case 8:
      return std::move(a) != std::move(b);
    case 9:
      return std::move(a) < std::move(b);
    case 10:
      return std::move(a) <= std::move(b);
    case 11:
      return std::move(a) > std::move(b);
    case 12:
      return std::move(a) >= std::move(b);
    case 13:
      return logical_and(std::move(a), std::move(b));
    default:
      return logical_or(std::move(a), std::move(b));
  }
}
constexpr int kNumBinary = 15;

Tensor scalar_rhs(int op, Tensor a, Scalar s) {
  switch (op) {
    case 0:
      return std::move(a) + s;
    case 1:
      return std::move(a) - s;
    case 2:
      return std::move(a) * s;
    case 3:
      return std::move(a) / s;
    case 4:
      return pow(std::move(a), s);
    case 5:
      return maximum(std::move(a), s);
    case 6:
      return minimum(std::move(a), s);
    case 7:
      return std::move(a) == s;
    case 8:
      return std::move(a) < s;
    default:
      return std::move(a) >= s;
  }
}
constexpr int kNumScalarRhs = 10;

Tensor scalar_lhs(int op, Scalar s, Tensor a) {
  switch (op) {
    case 0:
      return s + std::move(a);
    case 1:
      return s - std::move(a);
    case 2:
      return s * std::move(a);
    case 3:
      return s / std::move(a);
    default:
      return pow(s, std::move(a));
  }
}
constexpr int kNumScalarLhs = 5;

// Reduction `op` (sum, max, mean, min, argmax) of `a` over `axis` (kAllAxes: every element).
constexpr int kAllAxes = -100;
Tensor reduce(int op, Tensor a, int axis, bool keepdim) {
  if (axis == kAllAxes) {
    switch (op) {
      case 0:
        return sum(std::move(a));
      case 1:
        return max(std::move(a));
      case 2:
        return mean(std::move(a));
      case 3:
        return min(std::move(a));
      default:
        return argmax(std::move(a));
    }
  }
  switch (op) {
    case 0:
      return sum(std::move(a), axis, keepdim);
    case 1:
      return max(std::move(a), axis, keepdim);
    case 2:
      return mean(std::move(a), axis, keepdim);
    case 3:
      return min(std::move(a), axis, keepdim);
    default:
      return argmax(std::move(a), axis, keepdim);
  }
}
constexpr int kNumReductions = 5;

// The tensor step `s` makes from host data, of `shape`.
Tensor host_tensor(const Step& s, const Shape& shape, Device device) {
  const auto make = [&](const Shape& shape) {
    switch (s.dtype) {
      case kF32:
        return from_vector(std::vector<float>(s.data.begin(), s.data.end()), shape, device);
      case kF16: {
        std::vector<Half> v;
        for (double x : s.data) v.emplace_back(static_cast<float>(x));
        return from_vector(v, shape, device);
      }
      case kBF16: {
        std::vector<BFloat16> v;
        for (double x : s.data) v.emplace_back(static_cast<float>(x));
        return from_vector(v, shape, device);
      }
      case kI32: {
        std::vector<std::int32_t> v;
        for (double x : s.data) v.push_back(static_cast<std::int32_t>(x));
        return from_vector(v, shape, device);
      }
      case kI64: {
        std::vector<std::int64_t> v;
        for (double x : s.data) v.push_back(static_cast<std::int64_t>(x));
        return from_vector(v, shape, device);
      }
      case kBool: {
        std::vector<bool> v;
        for (double x : s.data) v.push_back(x != 0);
        return from_vector(v, shape, device);
      }
      case kI8: {
        std::vector<std::int8_t> v;
        for (double x : s.data) v.push_back(static_cast<std::int8_t>(x));
        return from_vector(v, shape, device);
      }
      case kU8: {
        std::vector<std::uint8_t> v;
        for (double x : s.data) v.push_back(static_cast<std::uint8_t>(x));
        return from_vector(v, shape, device);
      }
      case kF64:
        return from_vector(s.data, shape, device);
    }
    return Tensor();
  };
  return make(shape);
}

// What step `s` reads from the host: kInput its value, kStrided the data it views (laid out for
// the reversed shape, or at rank < 2 a doubled vector), kMatmul the weight, kIndex the indices.
Tensor host_data_of(const Step& s, Device device) {
  switch (s.kind) {
    case Step::Kind::kStrided: {
      if (s.shape.rank() >= 2) {
        Shape reversed;
        for (int d = s.shape.rank() - 1; d >= 0; --d) reversed.push_back(s.shape[d]);
        return host_tensor(s, reversed, device);
      }
      const std::int64_t n = s.shape.rank() == 1 ? s.shape[0] : 1;
      return host_tensor(s, Shape{2 * n}, device);
    }
    case Step::Kind::kIndex: {
      if (s.dtype == kI64) {
        std::vector<std::int64_t> v;
        for (double x : s.data) v.push_back(static_cast<std::int64_t>(x));
        return from_vector(v, s.shape, device);
      }
      std::vector<std::int32_t> v;
      for (double x : s.data) v.push_back(static_cast<std::int32_t>(x));
      return from_vector(v, s.shape, device);
    }
    default:
      return host_tensor(s, s.shape, device);
  }
}

bool reads_host_data(const Step& s) {
  return s.kind == Step::Kind::kInput || s.kind == Step::Kind::kStrided ||
         s.kind == Step::Kind::kIndex || s.kind == Step::Kind::kMatmul;
}

// The value of a kInput or kStrided step from its host data: kStrided transposes it (or takes
// every other element).
Tensor input_from(const Step& s, Tensor data) {
  if (s.kind == Step::Kind::kInput) return data;
  if (s.shape.rank() >= 2) {
    std::vector<int> axes;
    for (int d = s.shape.rank() - 1; d >= 0; --d) axes.push_back(d);
    return permute(std::move(data), axes);
  }
  const std::int64_t n = s.shape.rank() == 1 ? s.shape[0] : 1;
  return std::move(data).slice(0, 0, 2 * n, 2).reshape(s.shape);
}

// Applies a step to `vals` (moving operands where the step says so); `host` is what the step
// reads from the host (host_data_of), if it reads any.
void apply(const Step& s, std::vector<Tensor>& vals, Device device, Tensor host) {
  auto take = [&](int i, bool move) {
    return move ? std::move(vals[static_cast<std::size_t>(i)]) : vals[static_cast<std::size_t>(i)];
  };
  switch (s.kind) {
    case Step::Kind::kInput:
    case Step::Kind::kStrided:
      vals.push_back(input_from(s, std::move(host)));
      break;
    case Step::Kind::kUnary:
      vals.push_back(kUnary[s.op](take(s.a, s.move_a)));
      break;
    case Step::Kind::kBinary:
      vals.push_back(binary(s.op, take(s.a, s.move_a), take(s.b, false)));
      break;
    case Step::Kind::kScalarRhs:
      vals.push_back(scalar_rhs(s.op, take(s.a, s.move_a), s.scalar));
      break;
    case Step::Kind::kScalarLhs:
      vals.push_back(scalar_lhs(s.op, s.scalar, take(s.a, s.move_a)));
      break;
    case Step::Kind::kWhere:
      vals.push_back(where(take(s.a, false), take(s.b, s.move_a), take(s.c, false)));
      break;
    case Step::Kind::kCast:
      vals.push_back(take(s.a, s.move_a).to(s.dtype));
      break;
    case Step::Kind::kFull:
      vals.push_back(full(s.shape, s.scalar, s.dtype, device));
      break;
    case Step::Kind::kReduce:
      vals.push_back(reduce(s.op, take(s.a, s.move_a), s.b, s.c != 0));
      break;
    case Step::Kind::kDrop:
      vals[static_cast<std::size_t>(s.a)] = Tensor();
      break;
    case Step::Kind::kIndex: {
      const Tensor indices = std::move(host);
      Tensor x = take(s.a, s.move_a);
      vals.push_back(s.op == 0 ? index_select(std::move(x), s.b, indices)
                               : gather(std::move(x), s.b, indices));
      break;
    }
    case Step::Kind::kMatmul: {
      Tensor product = matmul(take(s.a, s.move_a), std::move(host));
      if (s.op == 0)
        vals.push_back(std::move(product));
      else if (s.op <= 4)  // the product moved into + - * / with value b (or b into it, + *)
        vals.push_back(s.c != 0 && (s.op == 1 || s.op == 3)
                           ? binary(s.op - 1, take(s.b, false), std::move(product))
                           : binary(s.op - 1, std::move(product), take(s.b, false)));
      else
        vals.push_back(std::move(product) * s.scalar);
      break;
    }
  }
}

// apply() with the step's host data made now.
void apply_from_host(const Step& s, std::vector<Tensor>& vals, Device device) {
  apply(s, vals, device, reads_host_data(s) ? host_data_of(s, device) : Tensor());
}

double random_value(DType d, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-4, 4);
  const int special = static_cast<int>(rng() % 24);
  if (d == kBool) return static_cast<double>(rng() % 2);
  // 8-bit values span their range, so sums and products wrap often; the extremes wrap on neg/abs.
  if (d == kU8) return special == 0 ? 255.0 : std::floor((u(rng) + 4) * 31);
  if (d == kI8) return special == 0 ? -128.0 : special == 1 ? 127.0 : std::floor(u(rng) * 31);
  if (!is_floating(d)) {
    if (special == 0) return d == kI32 ? 2147483647.0 : 9.0e18;
    return std::floor(u(rng) * 3);
  }
  if (d == kF64 && special == 6) return 1e300;  // beyond f32: its casts overflow to inf
  switch (special) {
    case 0:
      return NAN;
    case 1:
      return INFINITY;
    case 2:
      return -0.0;
    case 3:
      return 0.0;
    case 4:
      return 1e-30;
    case 5:
      return 60000.0;
    default:
      return u(rng);
  }
}

Scalar random_scalar(std::mt19937_64& rng) {
  switch (rng() % 4) {
    case 0:
      return static_cast<std::int64_t>(rng() % 11) - 5;
    case 1:
      return rng() % 2 == 0;
    default: {
      const double choices[] = {0.5, 2.0, -1.5, 0.0, 3.25, -0.1, 1e-3};
      return choices[rng() % 7];
    }
  }
}

}  // namespace

RandomProgram::RandomProgram(std::uint64_t seed, int max_ops, bool products) {
  std::mt19937_64 rng(seed);
  Shape base;
  const int rank = static_cast<int>(rng() % 4);
  const std::int64_t sizes[] = {1, 2, 3, 4, 5, 8, 17};
  for (int d = 0; d < rank; ++d) base.push_back(sizes[rng() % 7]);
  // Now and then rows longer than a compiled reduction kernel's chunk (2048 values) or than a
  // reduction block (65536), so the paths that split a row run too, the other dimensions small;
  // or an empty dimension.
  const std::uint64_t special = rng() % 32;
  if (rank > 0 && special == 0) {
    const std::int64_t long_rows[] = {2049, 2500, 65537, 70000};
    const std::int64_t row = long_rows[rng() % 4];
    for (int d = 0; d < rank - 1; ++d) base[d] = row > 65536 ? 1 : 1 + static_cast<int>(rng() % 3);
    base[rank - 1] = row;
  } else if (rank > 0 && special == 1) {
    base[static_cast<int>(rng() % static_cast<std::uint64_t>(rank))] = 0;
  }
  auto sub_shape = [&] {  // a shape that broadcasts into `base`
    Shape s;
    const int drop =
        base.rank() > 0 && rng() % 5 == 0 ? static_cast<int>(rng() % (base.rank() + 1)) : 0;
    for (int d = drop; d < base.rank(); ++d) s.push_back(rng() % 4 == 0 ? 1 : base[d]);
    return s;
  };

  std::vector<Tensor> vals;
  auto alive = [&] {
    std::vector<int> out;
    for (std::size_t i = 0; i < vals.size(); ++i)
      if (vals[i].defined()) out.push_back(static_cast<int>(i));
    return out;
  };
  const int inputs = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < inputs; ++i) {
    Step s;
    s.kind = rng() % 6 == 0 ? Step::Kind::kStrided : Step::Kind::kInput;
    s.dtype = kDtypes[rng() % std::size(kDtypes)];
    s.shape = sub_shape();
    const bool doubled = s.kind == Step::Kind::kStrided && s.shape.rank() < 2;  // see host_data_of
    for (std::int64_t k = 0; k < s.shape.numel() * (doubled ? 2 : 1); ++k)
      s.data.push_back(random_value(s.dtype, rng));
    apply_from_host(s, vals, Device::cpu());
    steps_.push_back(std::move(s));
  }
  const int ops = 1 + static_cast<int>(rng() % static_cast<std::uint64_t>(max_ops));
  for (int attempt = 0, made = 0; made < ops && attempt < 4 * ops; ++attempt) {
    const std::vector<int> live = alive();
    if (live.empty()) break;
    auto pick = [&] { return live[rng() % live.size()]; };
    Step s;
    const int r = static_cast<int>(rng() % 100);
    s.a = pick();
    s.move_a = rng() % 5 == 0;
    if (r < 25) {
      s.kind = Step::Kind::kUnary;
      s.op = static_cast<int>(rng() % kNumUnary);
    } else if (r < 52) {
      s.kind = Step::Kind::kBinary;
      s.op = static_cast<int>(rng() % kNumBinary);
      s.b = pick();
    } else if (r < 62) {
      s.kind = Step::Kind::kScalarRhs;
      s.op = static_cast<int>(rng() % kNumScalarRhs);
      s.scalar = random_scalar(rng);
    } else if (r < 67) {
      s.kind = Step::Kind::kScalarLhs;
      s.op = static_cast<int>(rng() % kNumScalarLhs);
      s.scalar = random_scalar(rng);
    } else if (r < 74) {
      s.kind = Step::Kind::kWhere;
      std::vector<int> bools;
      for (int i : live)
        if (vals[static_cast<std::size_t>(i)].dtype() == kBool) bools.push_back(i);
      if (bools.empty()) continue;
      s.a = bools[rng() % bools.size()];
      s.b = pick();
      s.c = pick();
    } else if (r < 82) {
      s.kind = Step::Kind::kCast;
      s.dtype = kDtypes[rng() % std::size(kDtypes)];
    } else if (r < 85) {
      s.kind = Step::Kind::kFull;
      s.shape = sub_shape();
      s.scalar = random_scalar(rng);
      s.dtype = kDtypes[rng() % std::size(kDtypes)];
    } else if (r < 89) {
      s.kind = Step::Kind::kReduce;
      s.op = static_cast<int>(rng() % kNumReductions);
      const int rk = vals[static_cast<std::size_t>(s.a)].rank();
      if (rk == 0) continue;
      // One axis (keepdim mostly, so the result broadcasts back against its input), or all.
      s.b = rng() % 6 == 0 ? kAllAxes : static_cast<int>(rng() % static_cast<std::uint64_t>(rk));
      s.c = rng() % 4 != 0;
    } else if (r < 94) {
      // Mostly as many indices as the axis is long (a shuffle with repeats: the result
      // broadcasts with its source), sometimes fewer or more.
      s.kind = Step::Kind::kIndex;
      s.op = static_cast<int>(rng() % 2);
      const Shape& from = vals[static_cast<std::size_t>(s.a)].shape();
      if (from.rank() == 0) continue;
      s.b = static_cast<int>(rng() % static_cast<std::uint64_t>(from.rank()));
      const std::int64_t size = from[s.b];
      const std::int64_t count =
          size == 0 || rng() % 4 != 0 ? size : 1 + static_cast<int>(rng() % 5);
      s.dtype = rng() % 2 ? kI64 : kI32;
      if (s.op == 0) {
        s.shape = Shape{count};
      } else {
        s.shape = from;
        s.shape[s.b] = count;
      }
      for (std::int64_t k = 0; k < s.shape.numel(); ++k)
        s.data.push_back(static_cast<double>(rng() % static_cast<std::uint64_t>(size)));
    } else if (r < 97 && products) {
      // A product by a square matrix keeps the value's shape, so what follows broadcasts with it
      // as before (bias adds, residual adds, scaling: the steps a product's epilogue takes).
      s.kind = Step::Kind::kMatmul;
      const Shape& from = vals[static_cast<std::size_t>(s.a)].shape();
      if (from.rank() == 0 || from[from.rank() - 1] > 64) continue;
      const std::int64_t n = from[from.rank() - 1];
      s.shape = Shape{n, n};
      const DType d = vals[static_cast<std::size_t>(s.a)].dtype();
      s.dtype = is_floating(d) && rng() % 4 != 0 ? d : kF32;
      for (std::int64_t k = 0; k < n * n; ++k) s.data.push_back(random_value(s.dtype, rng));
      // Mostly a step right after it that the product's epilogue may take: + - * / with another
      // value (the product on either side), or a scalar.
      s.op = static_cast<int>(rng() % 6);
      s.b = pick();
      s.c = static_cast<int>(rng() % 2);
      s.scalar = random_scalar(rng);
    } else {
      s.kind = Step::Kind::kDrop;
      if (live.size() < 2) continue;
    }
    // An operand used twice in one step is never moved (its other use still reads it). For
    // where, the flag moves the first value operand (b).
    if (s.kind == Step::Kind::kWhere    ? (s.b == s.a || s.b == s.c)
        : s.kind != Step::Kind::kReduce ? (s.a == s.b || s.a == s.c)
                                        : false)
      s.move_a = false;
    try {  // validate with copies first: a step the API refuses is not part of the program
      std::vector<Tensor> copy = vals;
      Step dry = s;
      dry.move_a = false;
      apply_from_host(dry, copy, Device::cpu());
    } catch (const Error&) {
      continue;
    }
    apply_from_host(s, vals, Device::cpu());
    steps_.push_back(s);
    ++made;
  }
  synchronize();
}

namespace {

// Value `i`'s number, then its elements as bit patterns (NaN canonical).
std::vector<std::uint64_t> bits_of(const Tensor& t, std::size_t i) {
  std::vector<std::uint64_t> bits{i};
  switch (t.dtype()) {
    case kF32:
      for (float x : t.to_vector<float>())
        bits.push_back(x != x ? 0x7fc00000u : std::bit_cast<std::uint32_t>(x));
      break;
    case kF16:
      for (Half x : t.to_vector<Half>())
        bits.push_back((x.bits & 0x7fff) > 0x7c00 ? 0x7e00u : x.bits);
      break;
    case kBF16:
      for (BFloat16 x : t.to_vector<BFloat16>())
        bits.push_back((x.bits & 0x7fff) > 0x7f80 ? 0x7fc0u : x.bits);
      break;
    case kI32:
      for (std::int32_t x : t.to_vector<std::int32_t>())
        bits.push_back(static_cast<std::uint32_t>(x));
      break;
    case kI64:
      for (std::int64_t x : t.to_vector<std::int64_t>())
        bits.push_back(static_cast<std::uint64_t>(x));
      break;
    case kBool:
      for (bool x : t.to_vector<bool>()) bits.push_back(x);
      break;
    case kI8:
      for (std::int8_t x : t.to_vector<std::int8_t>()) bits.push_back(static_cast<std::uint8_t>(x));
      break;
    case kU8:
      for (std::uint8_t x : t.to_vector<std::uint8_t>()) bits.push_back(x);
      break;
    case kF64:
      for (double x : t.to_vector<double>())
        bits.push_back(x != x ? 0x7ff8000000000000u : std::bit_cast<std::uint64_t>(x));
      break;
  }
  return bits;
}

}  // namespace

std::vector<std::vector<std::uint64_t>> RandomProgram::run(Device device) const {
  std::vector<Tensor> vals;
  for (const Step& s : steps_) apply_from_host(s, vals, device);
  std::vector<std::vector<std::uint64_t>> out;
  for (std::size_t i = 0; i < vals.size(); ++i)
    if (vals[i].defined()) out.push_back(bits_of(vals[i], i));
  return out;
}

std::vector<std::vector<std::vector<std::uint64_t>>> RandomProgram::run_compiled(
    int calls, CompileStats* stats, Device device) const {
  std::vector<std::size_t> held;  // the numbers of the values the function returns
  auto program = compile(
      [&](const std::vector<Tensor>& host) {
        std::vector<Tensor> vals;
        std::size_t next = 0;
        for (const Step& s : steps_)
          apply(s, vals, device, reads_host_data(s) ? host[next++] : Tensor());
        held.clear();
        std::vector<Tensor> out;
        for (std::size_t i = 0; i < vals.size(); ++i)
          if (vals[i].defined()) held.push_back(i), out.push_back(std::move(vals[i]));
        return out;
      },
      {.name = "random program"});
  std::vector<std::vector<std::vector<std::uint64_t>>> runs;
  for (int call = 0; call < calls; ++call) {
    std::vector<Tensor> host;  // fresh tensors each call, as a model's next batch would be
    for (const Step& s : steps_)
      if (reads_host_data(s)) host.push_back(host_data_of(s, device));
    const std::vector<Tensor> out = program(host);
    std::vector<std::vector<std::uint64_t>> bits;
    for (std::size_t k = 0; k < out.size(); ++k) bits.push_back(bits_of(out[k], held[k]));
    runs.push_back(std::move(bits));
  }
  if (stats) *stats = program.stats();
  return runs;
}

std::string RandomProgram::describe() const {
  std::ostringstream os;
  const char* kinds[] = {"input",      "strided", "unary", "binary", "scalar_rhs",
                         "scalar_lhs", "where",   "cast",  "full",   "reduce",
                         "drop",       "index",   "matmul"};
  int value = 0;
  for (const Step& s : steps_) {
    os << kinds[static_cast<int>(s.kind)];
    if (s.kind != Step::Kind::kDrop) os << " v" << value++ << " =";
    os << " op" << s.op << " (" << s.a << (s.move_a ? " moved" : "") << ", " << s.b << ", " << s.c
       << ") " << dtype_name(s.dtype) << ' ' << s.shape.to_string();
    if (s.kind == Step::Kind::kScalarLhs || s.kind == Step::Kind::kScalarRhs ||
        s.kind == Step::Kind::kFull)
      os << " scalar "
         << (s.scalar.is_floating() ? s.scalar.to_double() : static_cast<double>(s.scalar.to_int()))
         << (s.scalar.kind() == Scalar::Kind::kBool ? " (bool)"
             : s.scalar.is_floating()               ? " (float)"
                                                    : " (int)");
    os << '\n';
  }
  return os.str();
}

}  // namespace streamfuse::testing
