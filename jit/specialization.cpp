#include "jit/specialization.h"

#include <sstream>

#include "core/hash_mix.h"
#include "jit/program.h"

namespace streamfuse::jit {
namespace {

std::uint64_t hash_operand(std::uint64_t h, const OperandKey& k, int rank) {
  std::uint64_t v = static_cast<std::uint64_t>(k.dtype) |
                    (static_cast<std::uint64_t>(static_cast<std::uint8_t>(k.alias)) << 8);
  for (int d = 0; d < rank; ++d)
    v = (v << 2) ^ static_cast<std::uint64_t>(k.strides[static_cast<std::size_t>(d)]) ^ (v >> 60);
  return core::hash_mix(h, v);
}

void print_operand(std::ostream& os, const OperandKey& k, int rank) {
  os << dtype_name(k.dtype) << '[';
  for (int d = 0; d < rank; ++d) {
    switch (k.strides[static_cast<std::size_t>(d)]) {
      case StrideClass::kContiguous:
        os << 'c';
        break;
      case StrideClass::kZero:
        os << 'z';
        break;
      case StrideClass::kArgument:
        os << 'a';
        break;
    }
  }
  os << ']';
  if (k.alias >= 0) os << "=in" << int{k.alias};
}

}  // namespace

std::uint64_t SpecializationKey::hash() const {
  std::uint64_t h =
      core::hash_mix(static_cast<std::uint64_t>(rank), inputs.size() | (outputs.size() << 16));
  for (const OperandKey& k : inputs) h = hash_operand(h, k, rank);
  for (const OperandKey& k : outputs) h = hash_operand(h, k, rank);
  for (std::size_t i = 0; i < scalar_classes.size(); ++i)
    if (scalar_classes[i] != i) h = core::hash_mix(h, (i << 8) | scalar_classes[i]);
  return core::hash_mix(h, exact_reciprocals);
}

std::string SpecializationKey::to_string() const {
  std::ostringstream os;
  os << "rank " << int{rank} << "; in";
  for (const OperandKey& k : inputs) print_operand(os << ' ', k, rank);
  os << "; out";
  for (const OperandKey& k : outputs) print_operand(os << ' ', k, rank);
  if (!scalar_classes.empty()) {
    os << "; scalars";
    for (std::uint8_t c : scalar_classes) os << ' ' << int{c};
  }
  if (exact_reciprocals != 0) {
    os << "; exact 1/s:";
    for (int i = 0; i < 64; ++i)
      if (exact_reciprocals >> i & 1) os << ' ' << i;
  }
  return os.str();
}

std::uint64_t exact_reciprocal_scalars(std::uint64_t divisor_scalars,
                                       std::span<const std::int64_t> bits) {
  std::uint64_t mask = 0;
  for (std::size_t i = 0; i < bits.size() && i < 64; ++i) {
    if (!(divisor_scalars >> i & 1)) continue;
    // ±2^e with e in [-126, 126]: zero mantissa, biased exponent in [1, 253].
    const auto f = static_cast<std::uint32_t>(bits[i]);
    const std::uint32_t exponent = f >> 23 & 0xff;
    if ((f & 0x7fffff) == 0 && exponent >= 1 && exponent <= 253) mask |= std::uint64_t{1} << i;
  }
  return mask;
}

boost::container::small_vector<std::uint8_t, 16> equal_scalar_classes(
    std::span<const ScalarArg> args, std::span<const std::int64_t> bits) {
  boost::container::small_vector<std::uint8_t, 16> classes;
  const std::size_t n = bits.size();
  if (n < 2 || n > 256 || args.size() != n) return classes;
  bool any = false;
  classes.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    classes[i] = static_cast<std::uint8_t>(i);
    for (std::size_t j = 0; j < i; ++j)
      if (bits[j] == bits[i] && args[j].type == args[i].type) {
        classes[i] = static_cast<std::uint8_t>(j);
        any = true;
        break;
      }
  }
  if (!any) classes.clear();
  return classes;
}

}  // namespace streamfuse::jit
