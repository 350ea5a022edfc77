// The persistence of traced blocks (fusion/trace.h) and their tensors, shared by the kinds whose
// optimizations are made of them (elementwise, reduce): encoding, and the checks that make a
// decoded optimization as safe to run as a built one.
#pragma once

#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "cache/archive.h"
#include "core/ir.h"
#include "fusion/trace.h"

namespace streamfuse::fusion::traced_codec {

// The tensor a source names in the plan's ops (relative form); throws when it names none.
const core::TensorDesc& tensor_at(std::span<const core::OpDesc> ops, TensorSource s);
// Relative shapes hold size ids (0 is size 1): `s` broadcasts to `to` when, aligned from the
// right, each of its dims is 0 or the same id.
bool broadcasts_to(const Shape& s, const Shape& to);

void put_tensors(cache::OutArchive& out, const std::vector<TracedTensor>& tensors);
std::vector<TracedTensor> get_tensors(cache::InArchive& in, std::span<const core::OpDesc> ops);

void put_block(cache::OutArchive& out, const TracedBlock& block);
// Whether output `o` of a block, a tensor of relative shape `out`, fits the block's iteration
// shape `shape`.
using OutputFits =
    std::function<bool(const jit::ProgramOutput& o, const Shape& out, const Shape& shape)>;
// Reads one block and checks it against its program and the plan's ops: every operand is a
// tensor of the segment of the program's dtype, inputs broadcast to the iteration shape and
// outputs fit it, scalars exist. The launcher relies on all of it.
TracedBlock get_block(cache::InArchive& in, std::span<const core::OpDesc> ops,
                      const std::vector<TracedTensor>& tensors, const OutputFits& output_fits);

// Why the block's indexed reads do not make its kLoadAt instructions safe, or empty: each kLoadAt
// reads a read's source at that read's indices (a plain load of them) times its stride (a
// scalar argument of type i64), and nothing else reads a source. The launch checks the indices
// of each read; this is what makes every address a kernel computes one of those checks covers.
std::string indexed_reads_problem(const TracedBlock& block);

// Checks that the plan's ops are all of the kinds `takes` accepts (its builder's: a plan that
// says other ops run as kernels would skip them), and what a run relies on beyond each block
// fitting its program (see the definition).
void check_dataflow(std::span<const core::OpDesc> ops, const std::vector<TracedTensor>& tensors,
                    const std::vector<TracedBlock>& blocks, bool (*takes)(core::OpKind),
                    std::string_view kind);

}  // namespace streamfuse::fusion::traced_codec
