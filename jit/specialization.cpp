#include "jit/specialization.h"

#include <sstream>

namespace streamfuse::jit {
namespace {

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h *= 0xbf58476d1ce4e5b9ULL;
  return h ^ (h >> 31);
}

std::uint64_t hash_operand(std::uint64_t h, const OperandKey& k, int rank) {
  std::uint64_t v = static_cast<std::uint64_t>(k.dtype) |
                    (static_cast<std::uint64_t>(static_cast<std::uint8_t>(k.alias)) << 8);
  for (int d = 0; d < rank; ++d)
    v = (v << 2) ^ static_cast<std::uint64_t>(k.strides[static_cast<std::size_t>(d)]) ^ (v >> 60);
  return mix(h, v);
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
  std::uint64_t h = mix(static_cast<std::uint64_t>(rank), inputs.size() | (outputs.size() << 16));
  for (const OperandKey& k : inputs) h = hash_operand(h, k, rank);
  for (const OperandKey& k : outputs) h = hash_operand(h, k, rank);
  return h;
}

std::string SpecializationKey::to_string() const {
  std::ostringstream os;
  os << "rank " << int{rank} << "; in";
  for (const OperandKey& k : inputs) print_operand(os << ' ', k, rank);
  os << "; out";
  for (const OperandKey& k : outputs) print_operand(os << ' ', k, rank);
  return os.str();
}

}  // namespace streamfuse::jit
