#include "jit/interpreter.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "backends/cpu/kernels/layout.h"
#include "backends/cpu/kernels/parallel.h"
#include "jit/interpreter_step.h"
#include "streamfuse/error.h"

namespace streamfuse::jit {

using backends::cpu::ChunkFn;
using backends::cpu::Iteration;
using backends::cpu::Operand;

namespace {

constexpr std::int64_t kGrain = 8 * kChunk;  // elements before another thread helps

// Each register lives in a slot of kChunk values; a slot is reused once the last reader of its
// register has run (an op may write the slot it reads: element i is read before it is written).
// Scalar registers and program outputs keep their slots to the end.
struct Schedule {
  std::vector<std::int32_t> slot;  // per register
  std::vector<ValueType> types;    // per register
  std::vector<ChunkFn> fns;        // per instruction (kOp only)
  int num_slots = 0;
};

Schedule schedule(const FusedProgram& p, const backends::cpu::KernelTable& kernels) {
  Schedule s;
  const auto n = static_cast<std::size_t>(p.num_registers);
  s.types = p.register_types();
  std::vector<std::size_t> last_use(n, 0);
  for (std::size_t i = 0; i < p.prologue.size(); ++i)
    for (std::int32_t a : p.prologue[i].args)
      if (a >= 0) last_use[static_cast<std::size_t>(a)] = i;
  for (const ProgramOutput& o : p.outputs)
    last_use[static_cast<std::size_t>(o.reg)] = p.prologue.size();
  std::vector<char> scalar(n, 0);
  for (const Instruction& in : p.prologue)
    scalar[static_cast<std::size_t>(in.out)] = in.kind == InstrKind::kScalar;
  s.slot.assign(n, -1);
  s.fns.assign(p.prologue.size(), nullptr);
  std::vector<std::int32_t> free_slots;
  for (std::size_t i = 0; i < p.prologue.size(); ++i) {
    const Instruction& in = p.prologue[i];
    if (in.kind == InstrKind::kOp) {
      s.fns[i] = kernels.chunk.op(in.op, storage_dtype_of(in.type));
      if (!s.fns[i])
        throw Error(std::string("internal error: no interpreter loop for ") +
                    std::string(core::op_name(in.op)) + " on " + value_type_name(in.type));
    }
    // Registers read here for the last time give their slots back. The output may take such a
    // slot only if its values have the same width: a widening loop writing in place would
    // overwrite inputs it has not read yet.
    std::int32_t later[3];
    int num_later = 0;
    const std::size_t out_size =
        element_size(storage_dtype_of(s.types[static_cast<std::size_t>(in.out)]));
    for (int k = 0; k < 3; ++k) {
      const std::int32_t a = in.args[k];
      if (a < 0 || last_use[static_cast<std::size_t>(a)] != i ||
          scalar[static_cast<std::size_t>(a)])
        continue;
      if ((k > 0 && in.args[0] == a) || (k > 1 && in.args[1] == a)) continue;  // x * x: once
      const std::int32_t freed = s.slot[static_cast<std::size_t>(a)];
      if (element_size(storage_dtype_of(s.types[static_cast<std::size_t>(a)])) == out_size)
        free_slots.push_back(freed);
      else
        later[num_later++] = freed;
    }
    std::int32_t slot;
    if (in.kind != InstrKind::kScalar && !free_slots.empty()) {
      slot = free_slots.back();
      free_slots.pop_back();
    } else {
      slot = s.num_slots++;
    }
    for (int k = 0; k < num_later; ++k) free_slots.push_back(later[k]);
    s.slot[static_cast<std::size_t>(in.out)] = slot;
  }
  return s;
}

// kLoadAt over flat elements [start, start + n) of the iteration: each element's offset in
// operand k (the view) plus its index times its stride, read as stored, then converted by the
// eager kernels' own gather, as kLoad's values are.
//
// `run_constant`: the index and stride are the same along each run of the iteration (the index
// is a load broadcast along the innermost dimension, as an embedding's ids are), so a run is one
// copy without comparing indices.
void load_at(const Iteration& it, const Operand& op, int k, const Instruction& in,
             const std::vector<ValueType>& types, const void* index, const void* stride,
             bool run_constant, std::int64_t start, std::int64_t n, void* out,
             const backends::cpu::ChunkOps& chunk) {
  const auto size = static_cast<std::int64_t>(element_size(op.dtype));
  // Read into the register's slot when the values need no conversion, else into a buffer first.
  const bool as_stored = op.dtype == storage_dtype_of(in.type);
  alignas(64) unsigned char buffer[kSlotBytes];
  unsigned char* raw = as_stored ? static_cast<unsigned char*>(out) : buffer;
  const bool i32 = types[static_cast<std::size_t>(in.args[0])] == ValueType::kI32;
  const auto* strides = static_cast<const std::int64_t*>(stride);
  std::int64_t j = 0;
  const auto index_at = [&](std::int64_t e) {
    return i32 ? std::int64_t{static_cast<const std::int32_t*>(index)[e]}
               : static_cast<const std::int64_t*>(index)[e];
  };
  backends::cpu::for_each_run(it, start, start + n, [&](const auto& offsets, std::int64_t len) {
    const std::int64_t inner = it.inner_stride(k);
    // Elements that read at the same index along a contiguous run are one copy (an embedding
    // row), the others one element each.
    for (std::int64_t e = 0; e < len;) {
      const std::int64_t idx = index_at(j), by = strides[j];
      std::int64_t span = 1;
      if (inner == 1 && run_constant)
        span = len - e;
      else if (inner == 1)
        while (e + span < len && index_at(j + span) == idx && strides[j + span] == by) ++span;
      const std::int64_t at = offsets[static_cast<std::size_t>(k)] + e * inner + idx * by;
      std::memcpy(raw + j * size, op.data + at * size, static_cast<std::size_t>(span * size));
      e += span;
      j += span;
    }
  });
  if (as_stored) return;
  Iteration dense;  // the raw values as operand k of a flat iteration
  dense.rank = 1;
  dense.num_operands = k + 1;
  dense.numel = n;
  dense.sizes[0] = n;
  dense.strides[static_cast<std::size_t>(k)][0] = 1;
  Operand values = op;
  values.data = reinterpret_cast<char*>(raw);
  values.strides = {};
  values.strides[0] = 1;
  chunk.gather(dense, values, k, storage_dtype_of(in.type), 0, n, out);
}

}  // namespace

void interpret(const FusedProgram& p, const Iteration& it, std::span<const Operand> operands,
               std::span<const std::int64_t> scalars, const backends::cpu::KernelTable& kernels,
               int num_threads) {
  if (it.numel == 0) return;
  // Chunks of the iteration run the prologue: all the code of a kernel with no anchor.
  switch (p.anchor.kind) {
    case AnchorKind::kNone:
      if (!p.epilogue.empty()) throw Error("internal error: an epilogue with no anchor");
      break;
    case AnchorKind::kReduce:
      throw Error("internal error: a reduction program interpreted element-wise");
  }
  const Schedule s = schedule(p, kernels);
  const auto& chunk = kernels.chunk;
  // Per instruction: a kLoadAt whose index and stride do not change along a run (load_at).
  // Worked out only for programs that read at indices: this runs at every launch.
  std::vector<char> run_constant;
  if (std::any_of(p.prologue.begin(), p.prologue.end(),
                  [](const Instruction& in) { return in.kind == InstrKind::kLoadAt; })) {
    run_constant.assign(p.prologue.size(), 0);
    std::vector<const Instruction*> def(static_cast<std::size_t>(p.num_registers), nullptr);
    for (std::size_t i = 0; i < p.prologue.size(); ++i) {
      const Instruction& in = p.prologue[i];
      def[static_cast<std::size_t>(in.out)] = &in;
      if (in.kind != InstrKind::kLoadAt) continue;
      const Instruction* index = def[static_cast<std::size_t>(in.args[0])];
      const Instruction* stride = def[static_cast<std::size_t>(in.args[1])];
      run_constant[i] = index && index->kind == InstrKind::kLoad &&
                        it.inner_stride(index->index) == 0 && stride &&
                        stride->kind == InstrKind::kScalar;
    }
  }
  const int num_inputs = static_cast<int>(p.inputs.size());
  // Per instruction: where a load that reads its input in place finds position 0
  // (in_place_values), else null.
  boost::container::small_vector<unsigned char*, 64> in_place(p.prologue.size(), nullptr);
  for (std::size_t i = 0; i < p.prologue.size(); ++i) {
    const Instruction& in = p.prologue[i];
    if (in.kind != InstrKind::kLoad) continue;
    const bool is_output = std::any_of(p.outputs.begin(), p.outputs.end(),
                                       [&](const ProgramOutput& o) { return o.reg == in.out; });
    in_place[i] =
        in_place_values(in, operands[static_cast<std::size_t>(in.index)], it, is_output, 0);
  }

  backends::cpu::parallel_for(it.numel, kGrain, num_threads, [&](std::int64_t lo, std::int64_t hi) {
    // Slots as wide as this range's chunks (a small tensor, a scalar's chain: a few values).
    const std::int64_t width = std::min(kChunk, hi - lo);
    const Slots slots(static_cast<std::size_t>(s.num_slots), width);
    const auto slot = [&](std::int32_t r) {
      return slots[static_cast<std::size_t>(s.slot[static_cast<std::size_t>(r)])];
    };
    // Where each register's values are: its slot, or an input read in place.
    boost::container::small_vector<unsigned char*, 32> at(
        static_cast<std::size_t>(p.num_registers));
    for (std::int32_t r = 0; r < p.num_registers; ++r) at[static_cast<std::size_t>(r)] = slot(r);
    auto reg = [&](std::int32_t r) { return at[static_cast<std::size_t>(r)]; };
    // Scalars: their slots are filled once.
    for (const Instruction& in : p.prologue) {
      if (in.kind != InstrKind::kScalar) continue;
      const std::int64_t bits = scalars[static_cast<std::size_t>(in.index)];
      unsigned char* dst = reg(in.out);
      const std::size_t size = value_size(in.type);
      for (std::int64_t i = 0; i < width; ++i)
        std::memcpy(dst + i * static_cast<std::int64_t>(size), &bits, size);
    }
    for (std::int64_t start = lo; start < hi; start += kChunk) {
      const std::int64_t n = std::min(kChunk, hi - start);
      for (std::size_t i = 0; i < p.prologue.size(); ++i) {
        const Instruction& in = p.prologue[i];
        switch (in.kind) {
          case InstrKind::kLoad: {
            const DType as = storage_dtype_of(in.type);
            if (in_place[i])
              at[static_cast<std::size_t>(in.out)] =
                  in_place[i] + start * static_cast<std::int64_t>(element_size(as));
            else
              chunk.gather(it, operands[static_cast<std::size_t>(in.index)], in.index, as, start, n,
                           reg(in.out));
            break;
          }
          case InstrKind::kLoadAt:
            load_at(it, operands[static_cast<std::size_t>(in.index)], in.index, in, s.types,
                    reg(in.args[0]), reg(in.args[1]), run_constant[i] != 0, start, n, reg(in.out),
                    chunk);
            break;
          default:
            run_step(in, s.fns[i], chunk, s.types, reg, n);
            break;
        }
      }
      for (std::size_t o = 0; o < p.outputs.size(); ++o) {
        const int k = num_inputs + static_cast<int>(o);
        chunk.scatter(it, operands[static_cast<std::size_t>(k)], k,
                      storage_dtype_of(s.types[static_cast<std::size_t>(p.outputs[o].reg)]), start,
                      n, reg(p.outputs[o].reg));
      }
    }
  });
}

}  // namespace streamfuse::jit
