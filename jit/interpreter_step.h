// One instruction of a fused program over a chunk of values, as both interpreters run it (the
// element-wise one, jit/interpreter.cpp, and the reduction one, jit/reduce_interpreter.cpp):
// registers live in slots of values, ops run the eager kernels' own loops.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "backends/cpu/kernels/kernels.h"
#include "jit/program.h"

namespace streamfuse::jit {

// Registers live in slots of kChunk values of the widest value type.
inline constexpr std::int64_t kChunk = 1024;
inline constexpr std::size_t kSlotBytes = kChunk * 8;

// Bytes of one value of type t in a slot.
inline std::size_t value_size(ValueType t) { return element_size(storage_dtype_of(t)); }

// Runs `in` (not kLoad, kLoadAt, kScalar or kReduced: their values come from outside) over n values:
// `fn` is its op's loop (kOp), reg(r) the slot of register r.
template <class Reg>
void run_step(const Instruction& in, backends::cpu::ChunkFn fn,
              const backends::cpu::ChunkOps& chunk, const std::vector<ValueType>& types,
              const Reg& reg, std::int64_t n) {
  switch (in.kind) {
    case InstrKind::kOp: {
      const void* args[3] = {};
      for (int a = 0; a < 3 && in.args[a] >= 0; ++a) args[a] = reg(in.args[a]);
      fn(args, reg(in.out), n);
      break;
    }
    case InstrKind::kConvert:
      chunk.convert(storage_dtype_of(types[static_cast<std::size_t>(in.args[0])]),
                    storage_dtype_of(in.type), reg(in.args[0]), reg(in.out), n);
      break;
    case InstrKind::kRound: {
      void* out = reg(in.out);
      if (reg(in.args[0]) != out)
        std::memcpy(out, reg(in.args[0]), static_cast<std::size_t>(n) * value_size(in.type));
      chunk.round(in.round, out, n);
      break;
    }
    case InstrKind::kLoad:
    case InstrKind::kLoadAt:
    case InstrKind::kScalar:
    case InstrKind::kReduced:
      break;
  }
}

}  // namespace streamfuse::jit
