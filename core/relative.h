// The relative form of ops: what plans are made of, so one program matches the same plan at
// another batch size or with other constants.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <boost/unordered/unordered_flat_map.hpp>

#include "core/ir.h"

namespace streamfuse::core {

// Renumbers ops within a segment:
// - tensor ids densely, by first appearance;
// - sizes densely by value, with size 1 pinned to id 0 (so equal sizes keep the same id and a
//   broadcast pattern stays visible, while the sizes themselves drop out);
// - scalars into positional placeholders (their kind kept, their value the position).
// Everything else (kinds, dtypes, statuses, attrs) is kept: it is the program's structure.
//
// Runs for every recorded op with fusion on, so its lookups matter: a segment has few distinct
// tensors and sizes, and scanning a few dozen numbers costs less than hashing one
// (DenseNumbering); a long segment's are indexed by hash past that.
class DenseNumbering {
 public:
  // The number of `key`: 0 for the first key seen, 1 for the next new one, and so on. The scan
  // runs from the newest key: an op mostly reads what the ops just before it made.
  std::uint64_t number(std::uint64_t key);
  // The number of `key`, which the caller knows is new (an op's output: a tensor the stream
  // has just made), with no scan.
  std::uint64_t add_new(std::uint64_t key);
  std::size_t size() const { return keys_.size(); }
  void clear() {
    keys_.clear();  // keeps its capacity: a segment's numbering allocates nothing once warm
    // Only where used: clearing a flat map resets every group of its capacity, and a long
    // segment once left it large.
    if (!index_.empty()) index_.clear();
  }

 private:
  static constexpr std::size_t kScanned = 32;  // keys past this are indexed as well
  std::vector<std::uint64_t> keys_;            // by number
  boost::unordered_flat_map<std::uint64_t, std::uint64_t> index_;  // empty while scanned
};

class RelativeConverter {
 public:
  // Writes the relative form of `global` into `relative` (reusing its storage).
  void convert(const OpDesc& global, OpDesc& relative);
  // Starts a new segment: numbering restarts at zero.
  void reset();

 private:
  // `output`: the tensor is new (every recorded output is a tensor made by its op).
  void convert_desc(const TensorDesc& global, TensorDesc& relative, bool output);

  DenseNumbering ids_;
  DenseNumbering sizes_;  // of sizes other than 1 (id 0): a size's id is its number + 1
  std::int64_t next_scalar_ = 0;
};

// Checks that ops are the relative form RelativeConverter writes for a segment, op by op: tensor
// ids and size ids dense by first appearance, each tensor one shape and dtype everywhere, every
// output a new tensor, scalars numbered in order. Plans read from files are checked with it: a
// plan of other ops never matches a segment, and code that runs a plan may rely on its ops
// being what a stream records. Copyable, so a trigger's ops are checked as continuing the
// plan's.
class RelativeFormCheck {
 public:
  // Whether `op` continues the relative form of the ops accepted so far; after false the check
  // is spent.
  bool accept(const OpDesc& op);

 private:
  bool accept_desc(const TensorDesc& t, bool output);

  std::vector<std::pair<Shape, DType>> tensors_;  // by relative id
  std::int64_t sizes_ = 0;                        // size ids given out: 1..sizes_
  std::int64_t scalars_ = 0;
};

}  // namespace streamfuse::core
