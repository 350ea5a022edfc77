// Generated CPU kernels against a plain scalar evaluation of the same programs, written here with
// the same sf_* functions and compiled with the same flags (this file is built once per ISA level,
// and the JIT compiles for that level). Every case of the suite goes into one translation unit,
// compiled once. Results must agree bit for bit (any NaN matches any NaN: payloads are not part
// of the semantics).
#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/isa.h"
#include "backends/cpu/vector_math.h"
#include "backends/scalar_ops.h"
#include "jit/cpp_codegen.h"
#include "jit/kernel_abi.h"
#include "jit/system_compiler.h"
#include "streamfuse/error.h"
#include "tests/jit/codegen_cases.h"

namespace streamfuse::jit {
namespace {

using namespace streamfuse::jit::testing;  // NOLINT: the shared cases and their vocabulary

#define SF_TEST_STR_(x) #x
#define SF_TEST_STR(x) SF_TEST_STR_(x)
#ifdef STREAMFUSE_ISA
constexpr const char* kIsa = SF_TEST_STR(STREAMFUSE_ISA);
#else
constexpr const char* kIsa = "generic";
#endif
int test_level() {
  const std::string isa = kIsa;
  return isa == "v2" ? 2 : isa == "v3" ? 3 : isa == "v4" ? 4 : 0;
}

// ---- reference evaluation --------------------------------------------------------------------

union Value {
  float f;
  int i;
  long long l;
  unsigned char b;
};

Value convert(Value v, VT from, VT to) {
  Value r{};
  if (from == to) return v;
  switch (to) {
    case VT::kBool:
      r.b = from == VT::kFloat ? v.f != 0.0f : from == VT::kI32 ? v.i != 0 : v.l != 0;
      break;
    case VT::kFloat:
      r.f = from == VT::kI32   ? static_cast<float>(v.i)
            : from == VT::kI64 ? static_cast<float>(v.l)
                               : static_cast<float>(v.b);
      break;
    case VT::kI32:
      r.i = from == VT::kFloat ? sf_float_to_i32(v.f)
            : from == VT::kI64 ? static_cast<int>(v.l)
                               : v.b;
      break;
    case VT::kI64:
      r.l = from == VT::kFloat ? sf_float_to_i64(v.f) : from == VT::kI32 ? v.i : v.b;
      break;
  }
  return r;
}

std::size_t elem_size(DType d) {
  return d == kI64 ? 8 : d == kF32 || d == kI32 ? 4 : d == kBool ? 1 : 2;
}

Value load(const unsigned char* p, DType d, VT to) {
  Value v{};
  VT from = value_type_of(d);
  unsigned short h;
  switch (d) {
    case kF32:
      std::memcpy(&v.f, p, 4);
      break;
    case kF16:
      std::memcpy(&h, p, 2), v.f = sf_half_to_float(h);
      break;
    case kBF16:
      std::memcpy(&h, p, 2), v.f = sf_bf16_to_float(h);
      break;
    case kI32:
      std::memcpy(&v.i, p, 4);
      break;
    case kI64:
      std::memcpy(&v.l, p, 8);
      break;
    case kBool:
      v.b = *p;
      break;
  }
  return convert(v, from, to);
}

void store(unsigned char* p, DType d, Value v, VT from) {
  v = convert(v, from, value_type_of(d));
  unsigned short h;
  switch (d) {
    case kF32:
      std::memcpy(p, &v.f, 4);
      break;
    case kF16:
      h = sf_float_to_half(v.f), std::memcpy(p, &h, 2);
      break;
    case kBF16:
      h = sf_float_to_bf16(v.f), std::memcpy(p, &h, 2);
      break;
    case kI32:
      std::memcpy(p, &v.i, 4);
      break;
    case kI64:
      std::memcpy(p, &v.l, 8);
      break;
    case kBool:
      *p = v.b;
      break;
  }
}

template <class I>
I int_op(OpKind k, I a, I b) {
  switch (k) {
    case OpKind::kNeg:
      return sf_neg(a);
    case OpKind::kAbs:
      return sf_abs(a);
    case OpKind::kRelu:
      return sf_relu(a);
    case OpKind::kAdd:
      return sf_add(a, b);
    case OpKind::kSub:
      return sf_sub(a, b);
    case OpKind::kMul:
      return sf_mul(a, b);
    case OpKind::kPow:
      return sf_ipow(a, b);
    case OpKind::kMaximum:
      return sf_max(a, b);
    case OpKind::kMinimum:
      return sf_min(a, b);
    default:
      ADD_FAILURE() << "no integer form";
      return 0;
  }
}

float float_op(OpKind k, float a, float b) {
  switch (k) {
    case OpKind::kNeg:
      return -a;
    case OpKind::kAbs:
      return sf_abs(a);
    case OpKind::kExp:
      return sf_exp(a);
    case OpKind::kLog:
      return sf_log(a);
    case OpKind::kSqrt:
      return sf_sqrt(a);
    case OpKind::kRsqrt:
      return sf_rsqrt(a);
    case OpKind::kRecip:
      return sf_recip(a);
    case OpKind::kSin:
      return sf_sin(a);
    case OpKind::kCos:
      return sf_cos(a);
    case OpKind::kTanh:
      return sf_tanh(a);
    case OpKind::kErf:
      return sf_erf(a);
    case OpKind::kSigmoid:
      return sf_sigmoid(a);
    case OpKind::kRelu:
      return sf_relu(a);
    case OpKind::kAdd:
      return a + b;
    case OpKind::kSub:
      return a - b;
    case OpKind::kMul:
      return a * b;
    case OpKind::kDiv:
      return a / b;
    case OpKind::kPow:
      return sf_pow(a, b);
    case OpKind::kMaximum:
      return sf_max(a, b);
    case OpKind::kMinimum:
      return sf_min(a, b);
    default:
      ADD_FAILURE() << "no float form";
      return 0;
  }
}

template <class T>
unsigned char compare(OpKind k, T a, T b) {
  switch (k) {
    case OpKind::kEq:
      return a == b;
    case OpKind::kNe:
      return a != b;
    case OpKind::kLt:
      return a < b;
    case OpKind::kLe:
      return a <= b;
    case OpKind::kGt:
      return a > b;
    default:
      return a >= b;
  }
}

Value eval_op(OpKind k, VT t, Value a, Value b, Value c) {
  Value r{};
  const OpCategory cat = stream::op_category(k);
  if (k == OpKind::kWhere) return a.b ? b : c;
  if (cat == OpCategory::kLogical) {
    r.b = k == OpKind::kLogicalAnd ? a.b & b.b : k == OpKind::kLogicalOr ? a.b | b.b : a.b ^ 1;
    return r;
  }
  if (cat == OpCategory::kCompare) {
    r.b = t == VT::kFloat ? compare(k, a.f, b.f)
          : t == VT::kI32 ? compare(k, a.i, b.i)
          : t == VT::kI64 ? compare(k, a.l, b.l)
                          : compare(k, a.b, b.b);
    return r;
  }
  switch (t) {
    case VT::kFloat:
      r.f = float_op(k, a.f, b.f);
      break;
    case VT::kI32:
      r.i = int_op(k, a.i, b.i);
      break;
    case VT::kI64:
      r.l = int_op(k, a.l, b.l);
      break;
    case VT::kBool:
      r.b = k == OpKind::kMaximum ? sf_max(a.b, b.b) : sf_min(a.b, b.b);
      break;
  }
  return r;
}

Value scalar_value(std::int64_t bits, VT t) {
  Value v{};
  switch (t) {
    case VT::kFloat: {
      const auto u = static_cast<std::uint32_t>(bits);
      std::memcpy(&v.f, &u, 4);
      break;
    }
    case VT::kI32:
      v.i = static_cast<int>(bits);
      break;
    case VT::kI64:
      v.l = bits;
      break;
    case VT::kBool:
      v.b = static_cast<unsigned char>(bits);
      break;
  }
  return v;
}

// ---- buffers and launches --------------------------------------------------------------------

struct Operand {
  DType dtype;
  std::vector<long long> strides;  // elements, per merged dimension
  std::vector<unsigned char> bytes;
};

std::vector<long long> strides_for(const OperandKey& k, const std::vector<long long>& sizes) {
  std::vector<long long> s(sizes.size());
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    long long inner = 1;
    for (std::size_t e = d + 1; e < sizes.size(); ++e) inner *= sizes[e];
    s[d] = k.strides[d] == StrideClass::kContiguous ? inner
           : k.strides[d] == StrideClass::kZero     ? 0
                                                    : 2 * inner + 1;
  }
  return s;
}

std::size_t span(const std::vector<long long>& strides, const std::vector<long long>& sizes) {
  std::size_t n = 1;
  for (std::size_t d = 0; d < sizes.size(); ++d)
    n += static_cast<std::size_t>((sizes[d] - 1) * strides[d]);
  return n;
}

// The first elements walk through the special values (operand `phase` in another order, so
// binary ops meet many pairs); the rest are random, a quarter of them special.
void fill(Operand& op, int phase, std::mt19937& rng) {
  static const float specials[] = {0.0f,
                                   -0.0f,
                                   1.0f,
                                   -1.0f,
                                   0.5f,
                                   2.0f,
                                   3.0f,
                                   -2.5f,
                                   std::numeric_limits<float>::infinity(),
                                   -std::numeric_limits<float>::infinity(),
                                   std::numeric_limits<float>::quiet_NaN(),
                                   1e-40f,
                                   1e30f,
                                   -1e30f,
                                   88.7f,
                                   -104.0f,
                                   65504.0f,
                                   7e4f,
                                   3e9f,
                                   -1e19f};
  static const long long int_specials[] = {0,
                                           1,
                                           -1,
                                           2,
                                           -2,
                                           31,
                                           63,
                                           std::numeric_limits<int>::max(),
                                           std::numeric_limits<int>::min(),
                                           std::numeric_limits<long long>::max(),
                                           std::numeric_limits<long long>::min(),
                                           1000000007};
  std::uniform_real_distribution<float> real(-6.0f, 6.0f);
  std::uniform_int_distribution<int> small(-12, 12), pick(0, 3);
  const std::size_t n = op.bytes.size() / elem_size(op.dtype);
  for (std::size_t e = 0; e < n; ++e) {
    Value v{};
    VT from = VT::kFloat;
    const bool special = e < 60 || pick(rng) == 0;
    const std::size_t which =
        e < 60 ? e * (2 * static_cast<std::size_t>(phase) + 1) + phase : rng();
    if (op.dtype == kI32 || op.dtype == kI64 || op.dtype == kBool) {
      from = VT::kI64;
      v.l = special ? int_specials[which % std::size(int_specials)] : small(rng);
      if (op.dtype == kBool) v.l = op.dtype == kBool && e < 60 ? (e >> phase) & 1 : v.l & 1;
    } else {
      v.f = special ? specials[which % std::size(specials)] : real(rng);
    }
    store(op.bytes.data() + e * elem_size(op.dtype), op.dtype, v, from);
  }
}

// The reference: every element evaluated on its own, in program order.
void evaluate(const Case& c, const std::vector<long long>& scalars,
              const std::vector<Operand*>& ops) {
  const FusedProgram& p = c.program;
  const std::vector<VT> types = p.register_types();
  long long numel = 1;
  for (long long s : c.sizes) numel *= s;
  std::vector<Value> regs(static_cast<std::size_t>(p.num_registers));
  for (long long flat = 0; flat < numel; ++flat) {
    std::vector<long long> offset(ops.size(), 0);
    long long rest = flat;
    for (int d = static_cast<int>(c.sizes.size()) - 1; d >= 0; --d) {
      const long long idx = rest % c.sizes[static_cast<std::size_t>(d)];
      rest /= c.sizes[static_cast<std::size_t>(d)];
      for (std::size_t k = 0; k < ops.size(); ++k)
        offset[k] += idx * ops[k]->strides[static_cast<std::size_t>(d)];
    }
    const auto at = [&](std::size_t k) {
      return ops[k]->bytes.data() + offset[k] * static_cast<long long>(elem_size(ops[k]->dtype));
    };
    for (const Instruction& in : p.body) {
      const auto arg = [&](int j) {
        return in.args[j] >= 0 ? regs[static_cast<std::size_t>(in.args[j])] : Value{};
      };
      Value& out = regs[static_cast<std::size_t>(in.out)];
      switch (in.kind) {
        case InstrKind::kLoad:
          out = load(at(static_cast<std::size_t>(in.index)),
                     p.inputs[static_cast<std::size_t>(in.index)], in.type);
          break;
        case InstrKind::kScalar: {
          const VT t = p.scalars[static_cast<std::size_t>(in.index)].type;
          out = convert(scalar_value(scalars[static_cast<std::size_t>(in.index)], t), t, in.type);
          break;
        }
        case InstrKind::kOp:
          out = eval_op(in.op, in.type, arg(0), arg(1), arg(2));
          break;
        case InstrKind::kConvert:
          out = convert(arg(0), types[static_cast<std::size_t>(in.args[0])], in.type);
          break;
        case InstrKind::kRound:
          out.f = in.round == kF16 ? sf_round_f16(arg(0).f) : sf_round_bf16(arg(0).f);
          break;
      }
    }
    for (std::size_t o = 0; o < p.outputs.size(); ++o) {
      const ProgramOutput& po = p.outputs[o];
      store(at(p.inputs.size() + o), po.dtype, regs[static_cast<std::size_t>(po.reg)],
            types[static_cast<std::size_t>(po.reg)]);
    }
  }
}

bool is_nan(const unsigned char* p, DType d) {
  if (d == kF32 || d == kF16 || d == kBF16)
    return load(p, d, VT::kFloat).f != load(p, d, VT::kFloat).f;
  return false;
}

// ---- the suite -------------------------------------------------------------------------------

class CppCodegenTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (backends::cpu::kernel_table_for(test_level()) == nullptr && test_level() != 0) {
      skip_ = std::string("this CPU cannot run x86-64-") + kIsa + " code";
      return;
    }
    compiler_ = SystemCompiler::probe(test_level());
    if (!compiler_) {
      skip_ = "no C++ compiler found";
      return;
    }
    cases_ = build_cases();
    std::string source = cpu_kernel_prelude();
    for (std::size_t i = 0; i < cases_.size(); ++i)
      source += cpu_kernel_source(cases_[i].program, cases_[i].key, "k" + std::to_string(i));
    // CTest runs each test in its own process: the first compiles, the others load its library
    // (named by the hash of source, command and compiler; written with temp file + rename).
    const std::string base = std::string(STREAMFUSE_TEST_KERNEL_DIR) + "/codegen_" + kIsa + "_" +
                             compiler_->library_key(source);
    std::filesystem::create_directories(STREAMFUSE_TEST_KERNEL_DIR);
    const int lock = open((base + ".lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (lock >= 0) flock(lock, LOCK_EX);  // processes started together wait for one compile
    if (!std::filesystem::exists(base + ".so")) {
      const std::string tmp = base + "." + std::to_string(getpid());
      std::ofstream(tmp + ".cpp") << source;
      compiler_->compile(tmp + ".cpp", tmp + ".so");
      std::filesystem::rename(tmp + ".cpp", base + ".cpp");
      std::filesystem::rename(tmp + ".so", base + ".so");
      // Libraries of earlier versions of this suite are stale.
      const std::string stem = std::filesystem::path(base).filename().string();
      const std::string prefix = std::string("codegen_") + kIsa + "_";
      std::error_code ec;
      for (const auto& f : std::filesystem::directory_iterator(STREAMFUSE_TEST_KERNEL_DIR, ec)) {
        const std::string name = f.path().filename().string();
        if (name.rfind(prefix, 0) == 0 && name.rfind(stem, 0) != 0) std::filesystem::remove(f, ec);
      }
    }
    if (lock >= 0) close(lock);
    library_ = load_library(base + ".so");
  }
  static void TearDownTestSuite() { library_.reset(); }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
  }

  // Runs every case whose name starts with `prefix`; returns how many ran.
  static int run_cases(const std::string& prefix) {
    int ran = 0;
    for (std::size_t i = 0; i < cases_.size(); ++i) {
      if (cases_[i].name.rfind(prefix, 0) != 0) continue;
      const auto fn =
          reinterpret_cast<CpuKernelFn>(find_symbol(library_, ("k" + std::to_string(i)).c_str()));
      EXPECT_NE(fn, nullptr);
      if (fn) run_case(cases_[i], fn), ++ran;
    }
    return ran;
  }

  static void run_case(const Case& c, CpuKernelFn fn) {
    SCOPED_TRACE(c.name + "\n" + c.key.to_string() + "\n" + c.program.to_string());
    std::mt19937 rng(1234);
    const std::size_t ni = c.program.inputs.size();
    std::vector<Operand> ops;
    for (std::size_t k = 0; k < ni + c.program.outputs.size(); ++k) {
      const OperandKey& ok = k < ni ? c.key.inputs[k] : c.key.outputs[k - ni];
      Operand op{ok.dtype, strides_for(ok, c.sizes), {}};
      op.bytes.assign(span(op.strides, c.sizes) * elem_size(op.dtype), 0xA5);
      if (k < ni) fill(op, static_cast<int>(k), rng);
      ops.push_back(std::move(op));
    }
    std::vector<long long> scalars;
    for (std::size_t s = 0; s < c.program.scalars.size(); ++s)
      scalars.push_back(scalar_bits(c.program.scalars[s], c.scalar_values[s]));

    // Reference on separate buffers; the kernel writes aliased outputs over its input's copy.
    std::vector<Operand> expected = ops;
    for (std::size_t k = ni; k < ops.size(); ++k)
      if (const int alias = c.key.outputs[k - ni].alias; alias >= 0)
        expected[k].bytes = ops[static_cast<std::size_t>(alias)].bytes;  // gaps keep the input
    std::vector<Operand*> ref_ptrs;
    for (Operand& op : expected) ref_ptrs.push_back(&op);
    evaluate(c, scalars, ref_ptrs);

    std::vector<Operand> actual = ops;
    std::vector<char*> data;
    std::vector<long long> strides;
    for (std::size_t k = 0; k < actual.size(); ++k) {
      const int alias = k >= ni ? c.key.outputs[k - ni].alias : -1;
      data.push_back(reinterpret_cast<char*>(
          actual[alias >= 0 ? static_cast<std::size_t>(alias) : k].bytes.data()));
      strides.insert(strides.end(), actual[k].strides.begin(), actual[k].strides.end());
    }
    long long numel = 1;
    for (long long s : c.sizes) numel *= s;
    // Disjoint ranges that start and end inside runs, as threads call kernels.
    const long long cuts[] = {0, numel / 3 + 1, numel / 2 + 2, numel};
    for (int r = 0; r < 3; ++r) {
      const long long lo = std::min(cuts[r], numel), hi = std::min(cuts[r + 1], numel);
      if (lo < hi) fn(data.data(), c.sizes.data(), strides.data(), scalars.data(), lo, hi);
    }
    if (numel == 1) fn(data.data(), c.sizes.data(), strides.data(), scalars.data(), 0, 0);  // empty

    for (std::size_t k = ni; k < actual.size(); ++k) {
      const int alias = c.key.outputs[k - ni].alias;
      const Operand& got = actual[alias >= 0 ? static_cast<std::size_t>(alias) : k];
      const Operand& want = expected[k];
      const std::size_t es = elem_size(want.dtype);
      for (std::size_t e = 0; e < want.bytes.size() / es; ++e) {
        const unsigned char* a = got.bytes.data() + e * es;
        const unsigned char* b = want.bytes.data() + e * es;
        if (std::memcmp(a, b, es) == 0 || (is_nan(a, want.dtype) && is_nan(b, want.dtype)))
          continue;
        ADD_FAILURE() << "output " << k - ni << " (" << dtype_name(want.dtype) << ") element " << e
                      << ": got " << load(a, want.dtype, VT::kFloat).f << " want "
                      << load(b, want.dtype, VT::kFloat).f
                      << " (as i64: " << load(a, want.dtype, VT::kI64).l << " vs "
                      << load(b, want.dtype, VT::kI64).l << ")";
        return;
      }
    }
  }

  static inline std::string skip_;
  static inline std::optional<SystemCompiler> compiler_;
  static inline std::vector<Case> cases_;
  static inline std::shared_ptr<void> library_;
};

TEST_F(CppCodegenTest, EveryOpOnEveryValueType) { EXPECT_EQ(run_cases("op/"), 16); }
TEST_F(CppCodegenTest, LoadsAndStoresOfEveryDType) { EXPECT_EQ(run_cases("load/"), 6); }
TEST_F(CppCodegenTest, ConversionsBetweenValueTypes) { EXPECT_EQ(run_cases("convert"), 1); }
TEST_F(CppCodegenTest, RoundingTo16BitGrids) { EXPECT_EQ(run_cases("round"), 1); }
TEST_F(CppCodegenTest, GeluInEveryFloatDType) { EXPECT_EQ(run_cases("gelu/"), 3); }
TEST_F(CppCodegenTest, ScalarArgumentsInBothModes) { EXPECT_EQ(run_cases("scalars"), 1); }
TEST_F(CppCodegenTest, RanksBroadcastAndStrides) { EXPECT_EQ(run_cases("layout/"), 10); }
TEST_F(CppCodegenTest, OutputsOverTheirInputs) { EXPECT_EQ(run_cases("alias/"), 2); }

TEST(CppCodegen, SourceIncludesNothingAndNamesTheFunction) {
  const FusedProgram p = gelu(kF32);
  const std::string s = cpu_kernel_source(p, make_key(p, {"c"}), "my_kernel");
  EXPECT_NE(s.find("extern \"C\" void my_kernel("), std::string::npos);
  EXPECT_EQ(s.find("#include"), std::string::npos);
  EXPECT_NE(s.find("__restrict__"), std::string::npos);
  EXPECT_EQ(cpu_kernel_prelude().find("#include"), std::string::npos);
  EXPECT_NE(cpu_kernel_prelude().find("sf_float_to_half"), std::string::npos);  // scalar_ops.h
  EXPECT_NE(cpu_kernel_prelude().find("sf_erf"), std::string::npos);            // vector_math.h
}

TEST(CppCodegen, RejectsOpsWithoutAFormForTheirType) {
  Builder b;
  b.p.inputs = {kI32};
  b.store(b.op(OpKind::kExp, VT::kI32, b.load(0, VT::kI32)), kI32);
  EXPECT_THROW(cpu_kernel_source(b.p, make_key(b.p, {"c"}), "k"), CompileError);
  Builder d;
  d.p.inputs = {kF32};
  d.store(d.op(OpKind::kDiv, VT::kBool, d.load(0, VT::kBool), d.load(0, VT::kBool)), kBool);
  EXPECT_THROW(cpu_kernel_source(d.p, make_key(d.p, {"c"}), "k"), CompileError);
  // A key whose operand counts do not match the program.
  SpecializationKey key = make_key(b.p, {"c"});
  key.inputs.push_back(key.inputs[0]);
  EXPECT_THROW(cpu_kernel_source(gelu(kF32), key, "k"), CompileError);
}

}  // namespace
}  // namespace streamfuse::jit
