// The relative form of ops: what plans are made of, so one program matches the same plan at
// another batch size or with other constants.
#pragma once

#include <cstdint>

#include <boost/unordered/unordered_flat_map.hpp>

#include "stream/ir.h"

namespace streamfuse::stream {

// Renumbers ops within a segment:
// - tensor ids densely, by first appearance;
// - sizes densely by value, with size 1 pinned to id 0 (so equal sizes keep the same id and a
//   broadcast pattern stays visible, while the sizes themselves drop out);
// - scalars into positional placeholders (their kind kept, their value the position).
// Everything else (kinds, dtypes, statuses, attrs) is kept: it is the program's structure.
class RelativeConverter {
 public:
  // Writes the relative form of `global` into `relative` (reusing its storage).
  void convert(const OpDesc& global, OpDesc& relative);
  // Starts a new segment: numbering restarts at zero.
  void reset();

 private:
  void convert_desc(const TensorDesc& global, TensorDesc& relative);

  boost::unordered_flat_map<TensorId, TensorId> ids_;
  boost::unordered_flat_map<std::int64_t, std::int64_t> sizes_;
  std::int64_t next_scalar_ = 0;
};

}  // namespace streamfuse::stream
