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

#include <array>
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

// An index op (IndexSelect, Gather) a block computes as a kLoadAt: the launch views its source
// and its indices over the block's iteration shape, passes the source's stride along the axis,
// and checks the indices against the axis before the kernel runs.
struct IndexedRead {
  std::uint32_t op = 0;       // the op in the segment
  std::uint32_t source = 0;   // program input: the op's x, with stride 0 along the axis
  std::uint32_t indices = 0;  // program input: the op's indices, over the iteration shape
  std::uint32_t stride = 0;   // program scalar argument: x's element stride along the axis

  friend bool operator==(const IndexedRead&, const IndexedRead&) = default;
};

// Index ops one block reads through at most.
inline constexpr std::size_t kMaxIndexedReads = 8;

// The strides of index op `op`'s x (`x`: its own) and of its indices (`indices`) viewed over the
// op's result, as an IndexedRead's launch reads them: IndexSelect's x keeps its dimensions around
// the indices' (which read stride 0 in it), the indices' dimensions sit at the axis; Gather's x
// keeps its strides with the axis' 0, its index has the result's shape.
std::array<std::int64_t, kMaxRank> indexed_source_strides(
    const core::OpDesc& op, const std::array<std::int64_t, kMaxRank>& x);
std::array<std::int64_t, kMaxRank> indexed_indices_strides(
    const core::OpDesc& op, const std::array<std::int64_t, kMaxRank>& indices);

// One block as a kernel of its own (no anchor): its program and where its operands come from.
struct TracedBlock {
  jit::FusedProgram program;
  jit::ProgramFacts facts;             // of `program`
  TensorSource shape_source;           // a tensor of the iteration shape (the block's first op)
  std::vector<std::uint32_t> inputs;   // tensor index (into the trace's tensors) per program input
  std::vector<std::uint32_t> outputs;  // tensor index per program output
  std::vector<ScalarSource> scalars;   // per program scalar argument (a stride: see indexed)
  // Per output: the program input whose buffer it may take (a tensor that dies in this segment,
  // read last by this block, of the output's dtype and shape, not read at indices), or -1.
  std::vector<std::int32_t> lend;
  std::vector<IndexedRead> indexed;
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
    bool indexed_reads = false;  // takes IndexSelect and Gather (kernels with no anchor only)
  };

  explicit Trace(Limits limits) : limits_(limits) {}

  // Takes op number `index` of the segment (relative form, and the global form for sizes): a
  // Drop, a full() constant, an element-wise op, or with indexed_reads an IndexSelect or Gather
  // whose operands are in memory (not values of the block its result joins). False, and nothing
  // changed, for any other op or one that would pass the limits.
  bool take(const core::OpDesc& rel, const core::OpDesc& real, std::uint32_t index);
  // Whether take() may take an op of `kind` as a segment's first op (fusion/builder.h: never a
  // drop).
  bool may_start_with(core::OpKind kind) const;
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
    std::vector<IndexedRead> indexed;
  };

  Value& value(core::TensorId id, const core::TensorDesc& real, TensorSource source);
  std::int32_t choose_block(const core::OpDesc& rel, std::uint32_t index);
  // The first block of `shape` at or after block `first`, or a new one (-1 past the limit).
  std::int32_t block_for(const Shape& shape, std::size_t first, std::uint32_t index);
  bool take_indexed(const core::OpDesc& rel, const core::OpDesc& real, std::uint32_t index);
  // Appends `in` to block b; returns the new register.
  std::int32_t emit(Block& b, jit::Instruction in, jit::ValueType result);
  // The register of `id` in block b converted to `type` (loading or materializing it first).
  std::int32_t operand(Block& b, core::TensorId id, jit::ValueType type);
  std::int32_t scalar(Block& b, ScalarSource src, jit::ScalarArg arg);
  void emit_op(Block& b, std::int32_t bi, const core::OpDesc& rel, std::uint32_t index);
  // The op's output and inputs as values (seen first here, or again), their reads counted.
  void note_operands(const core::OpDesc& rel, const core::OpDesc& real, std::uint32_t index);
  // `out` is register `reg` of block bi (b).
  void produce(Block& b, std::int32_t bi, const core::TensorDesc& out, std::int32_t reg);
  // The op's inputs are read by block bi; those it moves in die here.
  void read_by(const core::OpDesc& rel, std::int32_t bi);
  // Whether a value made in the segment is written to memory.
  bool stored(const Value& v) const;

  Limits limits_;
  std::int64_t unfused_bytes_ = 0;
  boost::unordered_flat_map<core::TensorId, Value> values_;
  std::vector<core::TensorId> order_;  // values in order of first appearance
  std::vector<Block> blocks_;
};

}  // namespace streamfuse::fusion
