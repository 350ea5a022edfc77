// Trace: turns a run of a segment's element-wise relative ops into blocks of straight-line kernel
// code, one per iteration shape. Every builder uses one for its element-wise ops: the
// element-wise builder is a trace and nothing else; a builder around an anchor (a reduction, a
// matrix product) holds one before the anchor (its prologue) and one after (its epilogue).
//
// The trace keeps, per value of the segment: where it first appears (read from the segment at
// run time), where it is computed (a block's register, or a full() constant), whether it dies in
// the segment (dropped, or moved into an op) and which block reads it last. From that it decides
// what is written to memory (a value made here is stored only if a handle still holds it at the
// end of the segment, or a later block reads it), which dying input may lend its buffer to an
// output, and the memory traffic fusing saves.
//
// Ops join the block of their output shape; inputs broadcast into it. A block runs after the
// blocks before it, so an op joins the first block of its shape that comes after every block
// producing one of its inputs, or opens a new block. Drops are absorbed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <boost/unordered/unordered_flat_map.hpp>

#include "core/ir.h"
#include "jit/program.h"

namespace streamfuse::fusion {

// The bytes tensor `d` counts for in a builder's score (memory traffic saved): its size, or one
// element's when it has none. A plan is matched at every size of its relative form, which does
// not tell an empty dimension from others: explored on empty tensors, it must choose as it would
// on small ones (everything scoring 0 would store the ops unfused for every size).
std::int64_t scored_bytes(const core::TensorDesc& d);

// Where a relative tensor first appears in the segment: op `op`, input `slot` (or its output
// when slot is -1). The tensor's global id, shape and dtype are read there at run time.
struct TensorSource {
  std::uint32_t op = 0;
  std::int32_t slot = -1;
};

// Where a scalar argument's value is: scalars[slot] of op `op`.
struct ScalarSource {
  std::uint32_t op = 0;
  std::uint32_t slot = 0;
};

// A tensor the traced code reads, writes or lets go.
struct TracedTensor {
  TensorSource source;
  bool publish = false;  // an output the rest of the program still holds: stored as its value
  bool erase = false;    // an existing tensor whose last use is in this segment
};

// One block as a kernel of its own (no anchor): its program and where its operands come from.
struct TracedBlock {
  jit::FusedProgram program;
  jit::ProgramFacts facts;             // of `program`
  TensorSource shape_source;           // a tensor of the iteration shape (the block's first op)
  std::vector<std::uint32_t> inputs;   // tensor index (into the trace's tensors) per program input
  std::vector<std::uint32_t> outputs;  // tensor index per program output
  std::vector<ScalarSource> scalars;   // per program scalar argument
  // Per output: the program input whose buffer it may take (a tensor that dies in this segment,
  // read last by this block, of the output's dtype and shape), or -1.
  std::vector<std::int32_t> lend;
};

struct TraceResult {
  std::vector<TracedTensor> tensors;
  std::vector<TracedBlock> blocks;  // in order; a block nothing needs is left out
};

class Trace {
 public:
  // The builder's: how many blocks, and how many tensors one block reads and writes at most.
  struct Limits {
    std::size_t max_blocks;
    std::size_t max_block_operands;
  };

  explicit Trace(Limits limits) : limits_(limits) {}

  // Takes op number `index` of the segment (relative form, and the global form for sizes): a
  // Drop, a full() constant or an element-wise op. False, and nothing changed, for any other op
  // or one that would pass the limits.
  bool take(const core::OpDesc& rel, const core::OpDesc& real, std::uint32_t index);
  // Memory traffic saved, in bytes, at the sizes seen: read and written by the ops unfused minus
  // read and written by the blocks.
  std::int64_t saved_bytes() const;
  // The blocks as kernels (simplified), and a constant a handle still holds as a kernel of its
  // own; tensors in order of first use.
  TraceResult finish() const;
  void reset();

 private:
  enum class Origin : std::uint8_t { kExternal, kBlock, kConstant };
  struct Value {
    Origin origin = Origin::kExternal;
    std::int32_t block = -1;  // kBlock: the producing block
    std::int32_t reg = -1;    // kBlock: its register there
    DType dtype = kF32;
    Shape shape;             // relative sizes
    std::int64_t bytes = 0;  // at the sizes explored (for the score)
    TensorSource source;
    ScalarSource constant;          // kConstant: the full() value
    bool dies = false;              // dropped, or moved into an op, within the segment
    std::int32_t last_reader = -1;  // the last block reading it
  };
  struct Block {
    Shape shape;
    TensorSource shape_source;
    jit::FusedProgram program;
    std::vector<jit::ValueType> types;                             // per register
    boost::unordered_flat_map<core::TensorId, std::int32_t> regs;  // values available here
    std::vector<core::TensorId> inputs;                            // per program input
    std::vector<core::TensorId> produced;                          // in order
    std::vector<ScalarSource> scalars;                             // per program scalar argument
    boost::unordered_flat_map<std::uint64_t, std::int32_t> scalar_regs;  // by source
    boost::unordered_flat_map<std::uint64_t, std::int32_t> converted;    // (reg, type) -> reg
  };

  Value& value(core::TensorId id, const core::TensorDesc& real, TensorSource source);
  std::int32_t choose_block(const core::OpDesc& rel, std::uint32_t index);
  // Appends `in` to block b; returns the new register.
  std::int32_t emit(Block& b, jit::Instruction in, jit::ValueType result);
  // The register of `id` in block b converted to `type` (loading or materializing it first).
  std::int32_t operand(Block& b, core::TensorId id, jit::ValueType type);
  std::int32_t scalar(Block& b, ScalarSource src, jit::ScalarArg arg);
  void emit_op(Block& b, std::int32_t bi, const core::OpDesc& rel, std::uint32_t index);
  // Whether a value made in the segment is written to memory.
  bool stored(const Value& v) const;

  Limits limits_;
  std::int64_t unfused_bytes_ = 0;
  boost::unordered_flat_map<core::TensorId, Value> values_;
  std::vector<core::TensorId> order_;  // values in order of first appearance
  std::vector<Block> blocks_;
};

}  // namespace streamfuse::fusion
