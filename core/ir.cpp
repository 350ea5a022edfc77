#include "core/ir.h"

#include <algorithm>
#include <bit>
#include <sstream>

namespace streamfuse::core {
namespace {

constexpr OpInfo kOpInfos[] = {
#define STREAMFUSE_X(name, api, category, arity) {api, OpCategory::category, arity},
    STREAMFUSE_OP_KINDS(STREAMFUSE_X)
#undef STREAMFUSE_X
};

// 64-bit mix (splitmix64 finalizer): stable_hash_op's step per field (what names plan files,
// so it must not change), and hash_op's one final spread.
constexpr std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return h;
}

// Per value, a rotate and a multiply (a few cycles where `mix` takes about fifteen, and the
// policy hashes every segment's first op); one `mix` at the end spreads the bits.
constexpr std::uint64_t quick_mix(std::uint64_t h, std::uint64_t v) {
  return std::rotl(h ^ v, 23) * 0x9e3779b97f4a7c15ULL;
}

template <std::uint64_t (*Mix)(std::uint64_t, std::uint64_t)>
std::uint64_t hash_desc(std::uint64_t h, const TensorDesc& t) {
  h = Mix(h, t.id);
  h = Mix(h, static_cast<std::uint64_t>(t.shape.rank()));
  for (std::int64_t d : t.shape) h = Mix(h, static_cast<std::uint64_t>(d));
  return Mix(h, (static_cast<std::uint64_t>(t.dtype) << 8) | static_cast<std::uint64_t>(t.status));
}

// Every field operator== compares, folded by Mix.
template <std::uint64_t (*Mix)(std::uint64_t, std::uint64_t)>
std::uint64_t hash_fields(const OpDesc& op) {
  std::uint64_t h = Mix(0, static_cast<std::uint64_t>(op.kind));
  h = Mix(h, op.inputs.size() | (op.outputs.size() << 16) | (op.scalars.size() << 32));
  for (const TensorDesc& t : op.inputs) h = hash_desc<Mix>(h, t);
  for (const TensorDesc& t : op.outputs) h = hash_desc<Mix>(h, t);
  for (const Scalar& s : op.scalars)
    h = Mix(Mix(h, static_cast<std::uint64_t>(s.kind())), static_cast<std::uint64_t>(s.bits()));
  const OpAttrs& a = op.attrs;
  h = Mix(h, static_cast<std::uint64_t>(a.dtype) |
                 (static_cast<std::uint64_t>(a.scalar_side) << 8) |
                 (static_cast<std::uint64_t>(static_cast<std::uint8_t>(a.axis)) << 16) |
                 (static_cast<std::uint64_t>(a.keepdim) << 24));
  std::uint64_t perm = 0;
  for (std::int8_t p : a.perm) perm = (perm << 8) | static_cast<std::uint8_t>(p);
  h = Mix(h, perm);
  if (op_category(op.kind) != OpCategory::kWindow) return h;  // the default window elsewhere
  const Window& w = a.window;
  for (const auto* pair : {&w.kernel, &w.stride, &w.padding, &w.dilation})
    h = Mix(h, static_cast<std::uint32_t>((*pair)[0]) |
                   (std::uint64_t{static_cast<std::uint32_t>((*pair)[1])} << 32));
  return Mix(h, static_cast<std::uint32_t>(w.groups) | (std::uint64_t{w.ceil_mode} << 32) |
                    (std::uint64_t{w.count_include_pad} << 33));
}

}  // namespace

const OpInfo& op_info(OpKind kind) { return kOpInfos[static_cast<std::size_t>(kind)]; }

DType reduced_dtype(OpKind kind, DType in) {
  switch (kind) {
    case OpKind::kSum:
      return is_floating(in) ? in : kI64;
    case OpKind::kMean:
      return is_floating(in) ? in : kF32;
    case OpKind::kArgmax:
      return kI64;
    default:
      return in;  // max, min
  }
}

bool is_elementwise(OpKind kind) {
  switch (op_category(kind)) {
    case OpCategory::kUnary:
    case OpCategory::kBinary:
    case OpCategory::kCompare:
    case OpCategory::kLogical:
    case OpCategory::kSelect:
    case OpCategory::kCast:
      return true;
    default:
      return false;
  }
}

std::uint64_t hash_op(const OpDesc& op) { return mix(0, hash_fields<quick_mix>(op)); }

std::uint64_t stable_hash_op(const OpDesc& op) { return hash_fields<mix>(op); }

std::string_view status_name(TensorStatus s) {
  switch (s) {
    case TensorStatus::kNotInit:
      return "new";
    case TensorStatus::kReadOnly:
      return "ro";
    case TensorStatus::kReadWrite:
      return "rw";
  }
  return "?";
}

namespace {
void print_shape(std::ostream& os, const Shape& shape, OpForm form) {
  if (form == OpForm::kGlobal) {
    os << shape.to_string();
    return;
  }
  os << '[';
  for (int d = 0; d < shape.rank(); ++d) {
    if (d) os << ", ";
    if (shape[d] == 0)
      os << '1';
    else
      os << 's' << shape[d];
  }
  os << ']';
}

void print_desc(std::ostream& os, const TensorDesc& t, OpForm form, bool with_status) {
  os << 't' << t.id << ':';
  print_shape(os, t.shape, form);
  os << ':' << dtype_name(t.dtype);
  if (with_status) os << ':' << status_name(t.status);
}

void print_scalar(std::ostream& os, const Scalar& s, OpForm form) {
  if (form == OpForm::kRelative)
    os << '$' << s.bits();  // its position among the segment's scalars, whatever its kind
  else if (s.kind() == Scalar::Kind::kFloat)
    os << s.to_double();
  else
    os << s.to_int();
}
}  // namespace

std::string to_string(const OpDesc& op, OpForm form) {
  std::ostringstream os;
  os << op_name(op.kind) << '(';
  const char* sep = "";
  for (const TensorDesc& t : op.inputs) {
    os << sep;
    print_desc(os, t, form, true);
    sep = ", ";
  }
  for (const Scalar& s : op.scalars) {
    os << sep;
    print_scalar(os, s, form);
    sep = ", ";
  }
  os << ')';
  if (op.attrs.scalar_side != ScalarSide::kNone)
    os << (op.attrs.scalar_side == ScalarSide::kLhs ? "[scalar lhs]" : "[scalar rhs]");
  if (op_category(op.kind) == OpCategory::kReduce || op.kind == OpKind::kSlice ||
      op.kind == OpKind::kCat || op_category(op.kind) == OpCategory::kIndex ||
      op_category(op.kind) == OpCategory::kUpdate || op_category(op.kind) == OpCategory::kScan)
    os << "[axis " << int{op.attrs.axis} << (op.attrs.keepdim ? ", keepdim]" : "]");
  if (op_category(op.kind) == OpCategory::kWindow) {
    const Window& w = op.attrs.window;
    auto pair = [&](const char* name, const std::array<std::int32_t, 2>& v) {
      os << name << v[0] << 'x' << v[1];
    };
    pair("[kernel ", w.kernel);
    pair(", stride ", w.stride);
    pair(", padding ", w.padding);
    pair(", dilation ", w.dilation);
    if (w.groups != 1) os << ", groups " << w.groups;
    if (w.ceil_mode) os << ", ceil_mode";
    if (op.kind == OpKind::kAvgPool2d && !w.count_include_pad) os << ", padding not counted";
    os << ']';
  }
  for (const TensorDesc& t : op.outputs) {
    os << " -> ";
    print_desc(os, t, form, false);
  }
  return os.str();
}

std::optional<Shape> matmul_result_shape(const Shape& a, const Shape& b, std::string& why) {
  if (a.rank() == 0 || b.rank() == 0) {
    why = "operands need at least one dimension";
    return std::nullopt;
  }
  const std::int64_t k_a = a[a.rank() - 1], k_b = b.rank() == 1 ? b[0] : b[b.rank() - 2];
  if (k_a != k_b) {
    why = "inner dimensions differ (" + std::to_string(k_a) + " vs " + std::to_string(k_b) + ")";
    return std::nullopt;
  }
  const int batch_a = std::max(0, a.rank() - 2), batch_b = std::max(0, b.rank() - 2);
  const int batch = std::max(batch_a, batch_b);
  Shape out;
  for (int i = 0; i < batch; ++i) {
    const int ia = i - (batch - batch_a), ib = i - (batch - batch_b);
    const std::int64_t x = ia >= 0 ? a[ia] : 1, y = ib >= 0 ? b[ib] : 1;
    if (x != y && x != 1 && y != 1) {
      why = "batch dimensions do not broadcast (" + std::to_string(x) + " vs " + std::to_string(y) +
            ")";
      return std::nullopt;
    }
    out.push_back(x == 1 ? y : x);
  }
  if (a.rank() >= 2) out.push_back(a[a.rank() - 2]);
  if (b.rank() >= 2) out.push_back(b[b.rank() - 1]);
  return out;
}

}  // namespace streamfuse::core
