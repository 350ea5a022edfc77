// One instruction of a fused program over a chunk of values, as both interpreters run it (the
// element-wise one, jit/interpreter.cpp, and the reduction one, jit/reduce_interpreter.cpp):
// registers live in slots of values, ops run the eager kernels' own loops.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "backends/cpu/kernels/kernels.h"
#include "backends/cpu/kernels/layout.h"
#include "jit/program.h"

namespace streamfuse::jit {

// Registers live in slots of kChunk values of the widest value type.
inline constexpr std::int64_t kChunk = 1024;
inline constexpr std::size_t kSlotBytes = kChunk * 8;

// A launch's registers: `count` slots of `width` values each (at most kChunk), 64-byte aligned,
// not cleared (every step writes the values it is asked for before they are read). As wide as
// the launch's passes read, not kChunk: a launch over a few elements neither allocates nor fills
// whole chunks. Registers of up to kReusedSlotBytes come from memory the thread keeps from one
// launch to the next (interpreter_step.cpp): a small launch (a [4, 32] layer norm) allocated and
// freed them at every launch (malloc and free: about 3% of the small MLP's interpreted time,
// where its four interpreted launches are 16%). A thread holds one such block at a time; Slots
// made while it is held, and larger ones, allocate their own.
class Slots {
 public:
  static constexpr std::size_t kReusedSlotBytes = std::size_t{64} << 10;

  Slots(std::size_t count, std::int64_t width);
  ~Slots();
  Slots(const Slots&) = delete;
  Slots& operator=(const Slots&) = delete;
  unsigned char* operator[](std::size_t slot) const { return base_ + slot * bytes_; }

 private:
  std::size_t bytes_;
  std::unique_ptr<unsigned char[]> own_;  // empty when the thread's block is used
  bool reused_ = false;
  unsigned char* base_;
};

// Bytes of one value of type t in a slot.
inline std::size_t value_size(ValueType t) { return element_size(storage_dtype_of(t)); }

// Where load `in` (kLoad, of `operand` over `it`) finds positions [j, ...) of its values when it
// reads them in place, or null when it copies them into its register's slot. In place when the
// operand lies in the iteration's order (backends::cpu::dense_in) in the dtype the load reads:
// a register is written by its instruction only (jit/program_check.h), so nothing writes
// through one that points at an input, and every read of it comes before the outputs of the
// positions it covers are stored (one of which may be over that input's memory, a dying
// input's buffer reused). A load that is itself an output (`is_output`) is copied: it is stored
// after other outputs, which may be over its input.
inline unsigned char* in_place_values(const Instruction& in, const backends::cpu::Operand& operand,
                                      const backends::cpu::Iteration& it, bool is_output,
                                      std::int64_t j) {
  const DType as = storage_dtype_of(in.type);
  if (is_output || operand.dtype != as || !backends::cpu::dense_in(it, in.index)) return nullptr;
  return reinterpret_cast<unsigned char*>(operand.data) +
         j * static_cast<std::int64_t>(element_size(as));
}

// Runs `in` (not kLoad, kLoadAt, kScalar or kReduced: their values come from outside) over n
// values: `fn` is its op's loop (kOp), reg(r) the slot of register r.
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
