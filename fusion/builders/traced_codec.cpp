#include "fusion/builders/traced_codec.h"

#include <algorithm>
#include <string>

#include "jit/program_codec.h"

namespace streamfuse::fusion::traced_codec {
namespace {

void put_source(cache::OutArchive& out, TensorSource s) { out(s.op, s.slot); }

std::uint32_t get_index(cache::InArchive& in, std::size_t bound, const char* what) {
  std::uint32_t i = 0;
  in(i);
  if (i >= bound) cache::bad_payload(std::string(what) + " index " + std::to_string(i));
  return i;
}

TensorSource get_source(cache::InArchive& in, std::span<const core::OpDesc> ops) {
  TensorSource s;
  in(s.op, s.slot);
  tensor_at(ops, s);
  return s;
}

}  // namespace

std::string indexed_reads_problem(const TracedBlock& k) {
  const jit::FusedProgram& p = k.program;
  std::vector<const jit::Instruction*> def(static_cast<std::size_t>(p.num_registers), nullptr);
  for (const jit::Instruction& in : p.prologue)
    if (in.out >= 0 && in.out < p.num_registers) def[static_cast<std::size_t>(in.out)] = &in;
  const auto defined = [&](std::int32_t r) -> const jit::Instruction* {
    return r >= 0 && r < p.num_registers ? def[static_cast<std::size_t>(r)] : nullptr;
  };
  for (const IndexedRead& r : k.indexed)
    if (r.stride >= p.scalars.size() || p.scalars[r.stride].type != jit::ValueType::kI64 ||
        r.source >= p.inputs.size() || r.indices >= p.inputs.size() || r.source == r.indices)
      return "an indexed read of no such input or stride";
  for (const jit::Instruction& in : p.prologue) {
    if (in.kind != jit::InstrKind::kLoadAt) continue;
    const jit::Instruction* index = defined(in.args[0]);
    const jit::Instruction* stride = defined(in.args[1]);
    const bool read = std::any_of(k.indexed.begin(), k.indexed.end(), [&](const IndexedRead& r) {
      return static_cast<std::uint32_t>(in.index) == r.source && index &&
             index->kind == jit::InstrKind::kLoad &&
             static_cast<std::uint32_t>(index->index) == r.indices && stride &&
             stride->kind == jit::InstrKind::kScalar &&
             static_cast<std::uint32_t>(stride->index) == r.stride;
    });
    if (!read) return "an indexed load that is not its read's";
  }
  // Views are read only through their reads: a plain load of one would walk the view.
  for (const jit::Instruction& in : p.prologue) {
    if (in.kind != jit::InstrKind::kLoad) continue;
    for (const IndexedRead& r : k.indexed)
      if (static_cast<std::uint32_t>(in.index) == r.source)
        return "a plain load of an indexed read's source";
  }
  return {};
}

const core::TensorDesc& tensor_at(std::span<const core::OpDesc> ops, TensorSource s) {
  if (s.op >= ops.size()) cache::bad_payload("tensor source op " + std::to_string(s.op));
  const core::OpDesc& op = ops[s.op];
  if (s.slot < 0) {
    if (s.slot != -1 || op.outputs.empty()) cache::bad_payload("tensor source output");
    return op.outputs[0];
  }
  if (static_cast<std::size_t>(s.slot) >= op.inputs.size())
    cache::bad_payload("tensor source slot");
  return op.inputs[static_cast<std::size_t>(s.slot)];
}

bool broadcasts_to(const Shape& s, const Shape& to) {
  if (s.rank() > to.rank()) return false;
  const int offset = to.rank() - s.rank();
  for (int d = 0; d < s.rank(); ++d)
    if (s[d] != 0 && s[d] != to[offset + d]) return false;
  return true;
}

void put_tensors(cache::OutArchive& out, const std::vector<TracedTensor>& tensors) {
  out(static_cast<std::uint32_t>(tensors.size()));
  for (const TracedTensor& t : tensors) {
    put_source(out, t.source);
    out(t.publish, t.erase);
  }
}

std::vector<TracedTensor> get_tensors(cache::InArchive& in, std::span<const core::OpDesc> ops) {
  // One by one: a count that lies about a short payload fails before it allocates.
  std::vector<TracedTensor> tensors;
  for (std::uint32_t n = cache::get_size(in, cache::kMaxItems, "tensor"); n > 0; --n) {
    TracedTensor& t = tensors.emplace_back();
    t.source = get_source(in, ops);
    t.publish = cache::get_bool(in, "publish");
    t.erase = cache::get_bool(in, "erase");
  }
  return tensors;
}

void put_block(cache::OutArchive& out, const TracedBlock& k) {
  jit::put_program(out, k.program);
  put_source(out, k.shape_source);
  out(static_cast<std::uint32_t>(k.indexed.size()));
  for (const IndexedRead& r : k.indexed) out(r.op, r.source, r.indices, r.stride);
  const auto put_list = [&](const auto& list) {
    out(static_cast<std::uint32_t>(list.size()));
    for (const auto& v : list) out(v);
  };
  put_list(k.inputs);
  put_list(k.outputs);
  out(static_cast<std::uint32_t>(k.scalars.size()));
  for (const ScalarSource& s : k.scalars) out(s.op, s.slot);
  put_list(k.lend);
}

TracedBlock get_block(cache::InArchive& in, std::span<const core::OpDesc> ops,
                      const std::vector<TracedTensor>& tensors, const OutputFits& output_fits) {
  TracedBlock k;
  k.program = jit::get_program(in);
  k.facts = jit::ProgramFacts::of(k.program);
  k.shape_source = get_source(in, ops);
  const Shape& shape = tensor_at(ops, k.shape_source).shape;
  const auto tensor = [&](std::uint32_t t) -> const core::TensorDesc& {
    return tensor_at(ops, tensors[t].source);
  };
  const std::uint32_t num_indexed =
      cache::get_size(in, static_cast<std::uint32_t>(kMaxIndexedReads), "indexed read");
  for (std::uint32_t r = 0; r < num_indexed; ++r) {
    IndexedRead& read = k.indexed.emplace_back();
    in(read.op, read.source, read.indices, read.stride);
    if (read.op >= ops.size() || (ops[read.op].kind != core::OpKind::kIndexSelect &&
                                  ops[read.op].kind != core::OpKind::kGather))
      cache::bad_payload("an indexed read of no index op");
    if (ops[read.op].outputs[0].shape != shape)
      cache::bad_payload("an indexed read of another shape than its kernel's");
  }
  const auto viewed = [&](std::uint32_t i) {
    for (const IndexedRead& r : k.indexed)
      if (r.source == i || r.indices == i) return true;
    return false;
  };
  const std::uint32_t num_inputs = cache::get_size(in, cache::kMaxItems, "kernel input");
  if (num_inputs != k.program.inputs.size()) cache::bad_payload("kernel inputs");
  for (std::uint32_t i = 0; i < num_inputs; ++i) {
    k.inputs.push_back(get_index(in, tensors.size(), "kernel input"));
    const core::TensorDesc& t = tensor(k.inputs.back());
    // A view's shape is its index op's result (checked with the indexed reads below).
    if (t.dtype != k.program.inputs[i] || (!viewed(i) && !broadcasts_to(t.shape, shape)))
      cache::bad_payload("kernel input " + std::to_string(i) + " does not fit its program");
  }
  for (const IndexedRead& r : k.indexed) {
    const core::OpDesc& op = ops[r.op];
    if (r.source >= num_inputs || r.indices >= num_inputs ||
        tensor(k.inputs[r.source]).id != op.inputs[0].id ||
        tensor(k.inputs[r.indices]).id != op.inputs[1].id)
      cache::bad_payload("an indexed read of other inputs than its op's");
  }
  const std::uint32_t num_outputs = cache::get_size(in, cache::kMaxItems, "kernel output");
  if (num_outputs != k.program.outputs.size()) cache::bad_payload("kernel outputs");
  for (std::uint32_t o = 0; o < num_outputs; ++o) {
    k.outputs.push_back(get_index(in, tensors.size(), "kernel output"));
    const core::TensorDesc& t = tensor(k.outputs.back());
    if (t.dtype != k.program.outputs[o].dtype || !output_fits(k.program.outputs[o], t.shape, shape))
      cache::bad_payload("kernel output " + std::to_string(o) + " does not fit its program");
  }
  const std::uint32_t num_scalars = cache::get_size(in, cache::kMaxItems, "kernel scalar");
  if (num_scalars != k.program.scalars.size()) cache::bad_payload("kernel scalars");
  for (std::uint32_t s = 0; s < num_scalars; ++s) {
    ScalarSource source;
    in(source.op, source.slot);
    const bool stride = std::any_of(k.indexed.begin(), k.indexed.end(),
                                    [&](const IndexedRead& r) { return r.stride == s; });
    if (source.op >= ops.size() || (!stride && source.slot >= ops[source.op].scalars.size()))
      cache::bad_payload("kernel scalar source");
    k.scalars.push_back(source);
  }
  if (std::string why = indexed_reads_problem(k); !why.empty()) cache::bad_payload(why);
  if (cache::get_size(in, cache::kMaxItems, "kernel lend") != num_outputs)
    cache::bad_payload("kernel lends");
  for (std::uint32_t o = 0; o < num_outputs; ++o) {
    std::int32_t lend = 0;
    in(lend);
    if (lend < -1 || lend >= static_cast<std::int32_t>(num_inputs))
      cache::bad_payload("kernel lend");
    k.lend.push_back(lend);
  }
  return k;
}

namespace {

// What the segment's ops say of each tensor (by relative id: the plan's ops are a relative form,
// so ids are dense and each names one tensor).
struct TensorFacts {
  bool made = false;        // an op of the segment makes it (else it exists before)
  bool dies = false;        // dropped, or moved into an op (its last use is in the segment)
  std::int32_t entry = -1;  // its index in the optimization's tensors
};

std::vector<TensorFacts> tensor_facts(std::span<const core::OpDesc> ops,
                                      bool (*takes)(core::OpKind), std::string_view kind) {
  std::size_t descs = 0;
  for (const core::OpDesc& op : ops) descs += op.inputs.size() + op.outputs.size();
  std::vector<TensorFacts> facts;
  const auto fact = [&](const core::TensorDesc& t) -> TensorFacts& {
    // Dense ids (get_plan checked the relative form): fewer than the ops' tensors.
    if (t.id >= descs) cache::bad_payload("tensor id " + std::to_string(t.id));
    if (t.id >= facts.size()) facts.resize(static_cast<std::size_t>(t.id) + 1);
    return facts[static_cast<std::size_t>(t.id)];
  };
  for (const core::OpDesc& op : ops) {
    if (!takes(op.kind))
      cache::bad_payload("an " + std::string(kind) + " optimization over " +
                         std::string(core::op_name(op.kind)));
    for (const core::TensorDesc& t : op.inputs)
      if (op.kind == core::OpKind::kDrop || t.status == core::TensorStatus::kReadWrite)
        fact(t).dies = true;
      else
        fact(t);
    for (const core::TensorDesc& t : op.outputs) fact(t).made = true;
  }
  return facts;
}

// Checks what a run relies on beyond each kernel fitting its program (get_kernel), all of which
// the builders make true: tensors name distinct tensors; kernels write only tensors the
// segment makes, each tensor once, and read only tensors that exist before the segment or that an
// earlier kernel wrote (else a run reads a buffer nothing wrote, or a handle that is not there);
// the tensors the segment makes that outlive it are exactly those published, and the existing
// ones whose last use is here exactly those erased (else a value is lost, or a handle leaks);
// an input lent to an output dies here, is read by no later kernel, is lent once, and has the
// output's dtype and shape (else a kernel writes past its buffer, or over a live tensor).
}  // namespace

void check_dataflow(std::span<const core::OpDesc> ops, const std::vector<TracedTensor>& tensors,
                    const std::vector<TracedBlock>& kernels, bool (*takes)(core::OpKind),
                    std::string_view kind) {
  std::vector<TensorFacts> facts = tensor_facts(ops, takes, kind);
  const auto desc = [&](std::uint32_t t) -> const core::TensorDesc& {
    return tensor_at(ops, tensors[t].source);
  };
  for (std::uint32_t t = 0; t < tensors.size(); ++t) {
    TensorFacts& f = facts[static_cast<std::size_t>(desc(t).id)];
    if (f.entry >= 0) cache::bad_payload("two tensors of the optimization are one tensor");
    f.entry = static_cast<std::int32_t>(t);
    if (tensors[t].publish != (f.made && !f.dies)) cache::bad_payload("tensor publish flag");
    if (tensors[t].erase != (!f.made && f.dies)) cache::bad_payload("tensor erase flag");
  }
  for (const TensorFacts& f : facts)
    if ((f.made && !f.dies) || (!f.made && f.dies))
      if (f.entry < 0) cache::bad_payload("a tensor the segment publishes or erases is not listed");
  std::vector<std::int32_t> writer(tensors.size(), -1);
  std::vector<std::int32_t> last_reader(tensors.size(), -1);
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    for (std::uint32_t t : kernels[k].inputs) {
      if (facts[static_cast<std::size_t>(desc(t).id)].made && writer[t] < 0)
        cache::bad_payload("kernel " + std::to_string(k) +
                           " reads a tensor no earlier kernel wrote");
      last_reader[t] = static_cast<std::int32_t>(k);
    }
    for (std::uint32_t t : kernels[k].outputs) {
      if (!facts[static_cast<std::size_t>(desc(t).id)].made || writer[t] >= 0)
        cache::bad_payload("kernel " + std::to_string(k) + " writes a tensor that is not its own");
      writer[t] = static_cast<std::int32_t>(k);
    }
  }
  for (std::size_t t = 0; t < tensors.size(); ++t)
    if (tensors[t].publish && writer[t] < 0)
      cache::bad_payload("a published tensor nothing writes");
  // Lent inputs, by tensor: a tensor listed twice among a kernel's inputs is still lent once.
  std::vector<char> lent(tensors.size(), 0);
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    const TracedBlock& kernel = kernels[k];
    for (std::size_t o = 0; o < kernel.outputs.size(); ++o) {
      if (kernel.lend[o] < 0) continue;
      const std::uint32_t from = kernel.inputs[static_cast<std::size_t>(kernel.lend[o])];
      const TensorFacts& f = facts[static_cast<std::size_t>(desc(from).id)];
      const core::TensorDesc& in = desc(from);
      const core::TensorDesc& out = desc(kernel.outputs[o]);
      if (lent[from]++ || f.made || !f.dies || last_reader[from] != static_cast<std::int32_t>(k) ||
          in.dtype != out.dtype || in.shape != out.shape)
        cache::bad_payload("kernel " + std::to_string(k) + " lends an input it may not");
    }
  }
}

}  // namespace streamfuse::fusion::traced_codec
