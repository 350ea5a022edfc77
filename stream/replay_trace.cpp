#include "stream/replay_trace.h"

#include <algorithm>

#include <boost/unordered/unordered_flat_map.hpp>

#include "stream/device_streams.h"
#include "stream/stream.h"
#include "stream/tensor_node.h"

namespace streamfuse::stream {
namespace {

// Calls f(TensorDesc&) on every tensor of `ops` in the trace's order: each op's inputs, then its
// outputs.
template <class Ops, class F>
void for_each_tensor(Ops& ops, F&& f) {
  for (auto& op : ops) {
    for (auto& t : op.inputs) f(t);
    for (auto& t : op.outputs) f(t);
  }
}

// Gives each distinct size of `inputs` an id by first appearance (size 1: id 0); appends each
// dimension's id to `dims` (when not null) and each id's size to `sizes`.
void number_sizes(std::span<TensorNode* const> inputs, std::vector<std::uint16_t>* dims,
                  std::vector<std::int64_t>& sizes) {
  sizes.assign(1, 1);
  for (const TensorNode* n : inputs) {
    for (std::int64_t size : n->shape) {
      std::size_t id = 0;
      if (size != 1) {
        id = static_cast<std::size_t>(std::find(sizes.begin(), sizes.end(), size) - sizes.begin());
        if (id == sizes.size()) sizes.push_back(size);
      }
      if (dims) dims->push_back(static_cast<std::uint16_t>(id));
    }
  }
}

// A dimension of the trace's ops: a constant, the size of one size id of the arguments, or the
// product of two (a reshape to rows * columns).
constexpr std::int32_t kConstant = -1;
constexpr std::int32_t kIdLimit = 1 << 15;
std::int32_t product_of(std::size_t a, std::size_t b) {
  return -2 - static_cast<std::int32_t>(a * kIdLimit + b);
}
bool is_product(std::int32_t bound) { return bound <= -2; }
std::int64_t bound_size(std::int32_t bound, std::span<const std::int64_t> sizes) {
  if (!is_product(bound)) return sizes[static_cast<std::size_t>(bound)];
  const auto code = static_cast<std::size_t>(-2 - bound);
  return sizes[code / kIdLimit] * sizes[code % kIdLimit];
}

}  // namespace

struct ReplayTrace::Instance {
  std::vector<core::OpDesc> ops;
  // Where each tensor id of ops is, and the slot it takes its id from.
  std::vector<core::TensorId*> ids;
  std::vector<std::uint32_t> id_slots;
  // Where each dimension bound to a size id is, and the id.
  std::vector<std::int64_t*> dims;
  std::vector<std::int32_t> dim_bounds;
  SizeBinding sizes;  // what the bound dimensions hold now, per size id
};

ReplayTrace::~ReplayTrace() = default;

std::unique_ptr<ReplayTrace> ReplayTrace::clone() const {
  std::unique_ptr<ReplayTrace> t(new ReplayTrace());
  static_cast<ReplayTraceData&>(*t) = *this;
  t->refresh();
  return t;
}

std::unique_ptr<ReplayTrace> ReplayTrace::make(std::span<TensorNode* const> inputs,
                                               std::span<const Scalar> scalars,
                                               const TraceCapture& capture,
                                               std::span<TensorNode* const> results,
                                               std::string& why) {
  if (capture.read_values) {
    why =
        "it reads a tensor's value on the host (item, to_vector, copy_to, printing or .to(device)),"
        " and a replay would not, so nothing it does may depend on a value";
    return nullptr;
  }
  if (capture.recorded != capture.ops.size()) {
    why = "some of its ops ran outside fusion (fusion was switched off during the call)";
    return nullptr;
  }
  std::unique_ptr<ReplayTrace> t(new ReplayTrace());
  t->device_ = capture.device;
  t->scalars_.assign(scalars.begin(), scalars.end());

  // Slots: the arguments (an argument passed twice takes its first slot), then each tensor the
  // call made, in the order it made them.
  boost::unordered_flat_map<core::TensorId, std::uint32_t> slot_of;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto [it, fresh] = slot_of.try_emplace(inputs[i]->id, static_cast<std::uint32_t>(i));
    t->inputs_.push_back(InputGuard{inputs[i]->dtype, inputs[i]->shape.rank(), it->second});
    t->aliased_ = t->aliased_ || !fresh;
  }
  number_sizes(inputs, &t->dims_, t->sizes_);
  t->dynamic_.assign(t->sizes_.size(), false);

  const auto n_inputs = static_cast<std::uint32_t>(inputs.size());
  std::vector<bool> dead;  // per local: dropped or consumed inside the call
  t->ops_ = capture.ops;
  for (std::uint32_t i = 0; i < t->ops_.size(); ++i) {
    core::OpDesc& op = t->ops_[i];
    if (op.kind == core::OpKind::kRandUniform || op.kind == core::OpKind::kRandNormal) {
      why = "it draws random numbers, and a replay would draw the same ones again";
      return nullptr;
    }
    for (core::TensorDesc& in : op.inputs) {
      const auto it = slot_of.find(in.id);
      if (it == slot_of.end() && op.kind == core::OpKind::kDrop) {
        why =
            "it lets go of a tensor it was not given (it assigns a captured or static variable), "
            "which a replay would not do";
        return nullptr;
      }
      if (it == slot_of.end()) {
        why =
            "it reads a tensor it was not given as an argument (one a lambda captured, a global, "
            "or one made from host data); pass it as an argument";
        return nullptr;
      }
      in.id = it->second;
      const bool ends_here =
          op.kind == core::OpKind::kDrop || in.status == core::TensorStatus::kReadWrite;
      if (ends_here && in.id < n_inputs) {
        why = "an argument's value ended inside the call";  // the call holds one: not expected
        return nullptr;
      }
      if (ends_here) dead[in.id - n_inputs] = true;
    }
    for (core::TensorDesc& out : op.outputs) {
      const auto [it, fresh] = slot_of.try_emplace(out.id, n_inputs + t->locals_);
      if (!fresh) {
        why = "an op wrote a tensor that already existed";  // not expected
        return nullptr;
      }
      out.id = it->second;
      ++t->locals_;
      dead.push_back(false);
    }
  }
  std::vector<bool> returned(t->locals_, false);
  for (const TensorNode* r : results) {
    const auto it = slot_of.find(r->id);
    if (it == slot_of.end()) {
      why = "it returns a tensor that is neither an argument nor made by its ops on the device";
      return nullptr;
    }
    Result res{it->second, 0, 0};
    if (res.slot >= n_inputs) {
      returned[res.slot - n_inputs] = true;
      // The op that made it: the first whose output has that slot.
      for (std::uint32_t i = 0; i < t->ops_.size(); ++i)
        for (std::uint32_t o = 0; o < t->ops_[i].outputs.size(); ++o)
          if (t->ops_[i].outputs[o].id == res.slot) res.op = i, res.out = o;
    }
    t->results_.push_back(res);
  }
  for (std::uint32_t k = 0; k < t->locals_; ++k) {
    if (!dead[k] && !returned[k]) {
      why =
          "it keeps a tensor it made beyond the call (in a captured or static variable), which a "
          "replay would not update";
      return nullptr;
    }
  }
  t->steps_ = capture.steps;
  for_each_tensor(t->ops_, [&](const core::TensorDesc& d) {
    t->bound_.insert(t->bound_.end(), static_cast<std::size_t>(d.shape.rank()), kConstant);
  });
  t->refresh();
  return t;
}

bool ReplayTrace::admits(Device device, std::span<TensorNode* const> inputs,
                         std::span<const Scalar> scalars, SizeBinding& sizes) const {
  if (device != device_ || inputs.size() != inputs_.size() || scalars.size() != scalars_.size())
    return false;
  if (!std::equal(scalars.begin(), scalars.end(), scalars_.begin())) return false;
  // Which arguments are one tensor. A model's weights are many arguments, rarely aliased: a
  // sorted copy finds out in n log n, and only a call with aliases compares them pairwise.
  bool aliased = false;
  if (inputs.size() > 1) {
    boost::container::small_vector<const TensorNode*, 16> sorted(inputs.begin(), inputs.end());
    std::sort(sorted.begin(), sorted.end());
    aliased = std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end();
  }
  if (aliased != aliased_) return false;
  sizes.assign(sizes_.size(), -1);
  sizes[0] = 1;
  std::size_t dim = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const TensorNode* n = inputs[i];
    const InputGuard& g = inputs_[i];
    if (n->dtype != g.dtype || n->shape.rank() != g.rank) return false;
    if (aliased) {
      std::uint32_t alias = 0;
      while (inputs[alias] != n) ++alias;
      if (alias != g.alias) return false;
    }
    for (std::int64_t size : n->shape) {
      const std::uint16_t id = dims_[dim++];
      if ((id == 0) != (size == 1)) return false;
      std::int64_t& bound = sizes[id];
      if (bound == size) continue;
      if (bound >= 0) return false;  // the id had another size
      if (!dynamic_[id]) {
        if (size != sizes_[id]) return false;
      } else if (std::binary_search(constants_.begin(), constants_.end(), size)) {
        return false;
      }
      // Different ids, different sizes.
      if (std::find(sizes.begin(), sizes.end(), size) != sizes.end()) return false;
      bound = size;
    }
  }
  // A product of sizes is a size of its own too.
  for (std::size_t i = 0; i < products_.size(); ++i) {
    const std::int64_t size = bound_size(products_[i], sizes);
    if (std::binary_search(constants_.begin(), constants_.end(), size) ||
        std::find(sizes.begin(), sizes.end(), size) != sizes.end())
      return false;
    for (std::size_t j = 0; j < i; ++j)
      if (bound_size(products_[j], sizes) == size) return false;
  }
  return true;
}

bool ReplayTrace::generalize(const ReplayTrace& other) {
  if (device_ != other.device_ || dims_ != other.dims_ || scalars_ != other.scalars_ ||
      ops_.size() != other.ops_.size() || steps_.size() != other.steps_.size() ||
      locals_ != other.locals_ || results_.size() != other.results_.size())
    return false;
  if (aliased_ != other.aliased_) return false;
  for (std::size_t i = 0; i < inputs_.size(); ++i) {
    const InputGuard &a = inputs_[i], &b = other.inputs_[i];
    if (a.dtype != b.dtype || a.rank != b.rank || a.alias != b.alias) return false;
  }
  // The same plans: a plan that learned a trigger or a successor is a new object with the same
  // ops and optimization.
  const auto same_plan = [](const fusion::PlanRef& a, const fusion::PlanRef& b) {
    return a == b || (a && b && a->optimization == b->optimization && a->ops == b->ops);
  };
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    const CapturedStep &a = steps_[i], &b = other.steps_[i];
    if (!same_plan(a.plan, b.plan) || a.first != b.first || a.len != b.len) return false;
  }
  for (std::size_t i = 0; i < results_.size(); ++i)
    if (results_[i].slot != other.results_[i].slot) return false;

  // What a dimension that is va here and vb in `other` follows: one size id, else the product
  // of two, else nothing (kConstant).
  const auto follow = [&](std::int64_t va, std::int64_t vb) {
    for (std::size_t k = 1; k < sizes_.size(); ++k)
      if (sizes_[k] == va && other.sizes_[k] == vb) return static_cast<std::int32_t>(k);
    for (std::size_t k = 1; k < sizes_.size(); ++k)
      for (std::size_t j = k; j < sizes_.size(); ++j)
        if (sizes_[k] * sizes_[j] == va && other.sizes_[k] * other.sizes_[j] == vb)
          return product_of(k, j);
    return kConstant;
  };
  std::vector<std::int32_t> bound = bound_;
  std::size_t next = 0;
  const auto same_tensor = [&](const core::TensorDesc& a, const core::TensorDesc& b) {
    if (a.id != b.id || a.dtype != b.dtype || a.status != b.status ||
        a.shape.rank() != b.shape.rank())
      return false;
    for (int d = 0; d < a.shape.rank(); ++d) {
      std::int32_t& id = bound[next++];
      const std::int64_t va = a.shape[d], vb = b.shape[d];
      if (id != kConstant) {
        if (vb != bound_size(id, other.sizes_)) return false;
        continue;
      }
      if (va == vb) continue;
      id = follow(va, vb);
      if (id == kConstant) return false;  // a size the arguments' sizes do not give
    }
    return true;
  };
  for (std::size_t i = 0; i < ops_.size(); ++i) {
    const core::OpDesc &a = ops_[i], &b = other.ops_[i];
    if (a.kind != b.kind || !(a.attrs == b.attrs) || a.scalars != b.scalars ||
        a.inputs.size() != b.inputs.size() || a.outputs.size() != b.outputs.size())
      return false;
    for (std::size_t j = 0; j < a.inputs.size(); ++j)
      if (!same_tensor(a.inputs[j], b.inputs[j])) return false;
    for (std::size_t j = 0; j < a.outputs.size(); ++j)
      if (!same_tensor(a.outputs[j], b.outputs[j])) return false;
  }
  bound_ = std::move(bound);
  for (std::size_t k = 1; k < sizes_.size(); ++k)
    if (sizes_[k] != other.sizes_[k]) dynamic_[k] = true;
  refresh();
  return true;
}

std::size_t ReplayTrace::dynamic_size_count() const {
  return static_cast<std::size_t>(std::count(dynamic_.begin(), dynamic_.end(), true));
}

void ReplayTrace::refresh() {
  constants_.clear();
  std::size_t next = 0;
  products_.clear();
  for_each_tensor(ops_, [&](const core::TensorDesc& d) {
    for (std::int64_t size : d.shape) {
      const std::int32_t bound = bound_[next++];
      if (bound == kConstant && size > 1) constants_.push_back(size);
      if (is_product(bound) &&
          std::find(products_.begin(), products_.end(), bound) == products_.end())
        products_.push_back(bound);
    }
  });
  // The exact sizes of the arguments are sizes a dynamic one must differ from too.
  for (std::size_t k = 1; k < sizes_.size(); ++k)
    if (!dynamic_[k]) constants_.push_back(sizes_[k]);
  std::sort(constants_.begin(), constants_.end());
  constants_.erase(std::unique(constants_.begin(), constants_.end()), constants_.end());
  instance_ = make_instance();
}

std::unique_ptr<ReplayTrace::Instance> ReplayTrace::make_instance() const {
  auto in = std::make_unique<Instance>();
  in->ops = ops_;
  std::size_t next = 0;
  for_each_tensor(in->ops, [&](core::TensorDesc& d) {
    in->ids.push_back(&d.id);
    in->id_slots.push_back(static_cast<std::uint32_t>(d.id));
    for (int k = 0; k < d.shape.rank(); ++k) {
      const std::int32_t bound = bound_[next++];
      if (bound == kConstant) continue;
      in->dims.push_back(&d.shape[k]);
      in->dim_bounds.push_back(bound);
    }
  });
  in->sizes.assign(sizes_.begin(), sizes_.end());
  return in;
}

void ReplayTrace::run(DeviceStreams& streams, Stream& stream, std::span<TensorNode* const> inputs,
                      const SizeBinding& sizes, std::vector<TensorNode*>& results) {
  // The cached instance, unless another thread is running this trace: then a copy of its own.
  std::unique_ptr<Instance> own;
  Instance* in = instance_.get();
  const bool cached = !instance_busy_.exchange(true, std::memory_order_acquire);
  if (!cached) {
    own = make_instance();
    in = own.get();
  }
  const auto n_inputs = static_cast<std::uint32_t>(inputs_.size());
  const core::TensorId base = streams.new_ids(locals_);
  for (std::size_t k = 0; k < in->ids.size(); ++k) {
    const std::uint32_t slot = in->id_slots[k];
    *in->ids[k] = slot < n_inputs ? inputs[slot]->id : base + (slot - n_inputs);
  }
  if (!std::equal(sizes.begin(), sizes.end(), in->sizes.begin(), in->sizes.end())) {
    for (std::size_t k = 0; k < in->dims.size(); ++k)
      *in->dims[k] = bound_size(in->dim_bounds[k], sizes);
    in->sizes.assign(sizes.begin(), sizes.end());
  }
  try {
    stream.replay(in->ops, steps_);
  } catch (...) {
    if (cached) instance_busy_.store(false, std::memory_order_release);
    throw;
  }
  // One node per result slot: a tensor returned twice is one tensor.
  const std::size_t first = results.size();
  for (std::size_t r = 0; r < results_.size(); ++r) {
    const Result& res = results_[r];
    TensorNode* node = nullptr;
    for (std::size_t q = 0; q < r && !node; ++q)
      if (results_[q].slot == res.slot) node = results[first + q];
    if (node) {
      retain(node);
    } else if (res.slot < n_inputs) {
      node = inputs[res.slot];
      retain(node);
    } else {
      const core::TensorDesc& d = in->ops[res.op].outputs[res.out];
      // The replay ran at once: no queued use of it waits on this stream.
      node = new_node(streams, &stream, /*uses_through=*/0, d.id, d.shape, d.dtype);
    }
    results.push_back(node);
  }
  if (cached) instance_busy_.store(false, std::memory_order_release);
}

}  // namespace streamfuse::stream
