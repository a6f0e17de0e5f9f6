// ZeRO's partitioning: the reduced parameters, flattened in registration order, are split
// into N contiguous, byte-balanced ranges; rank r owns range r (its gradients after reduction,
// its optimizer state and the master copy of those parameters).
#pragma once
#include <cstdint>
#include <vector>

#include "core/plan.h"
#include "core/trace.h"

namespace redsim {

struct ZeroPartition {
  std::vector<std::int64_t> offset_bytes;  // per parameter: start in the flat space (-1 if not reduced)
  std::vector<std::int64_t> bounds;        // N+1 byte offsets; rank r owns [bounds[r], bounds[r+1])
  std::int64_t total_bytes = 0;
  std::int64_t max_shard_bytes() const;
};

// Bounds fall on element boundaries of the parameter they cut.
ZeroPartition partition_parameters(const ModelTrace& trace, int world);

// The slices of `params` (whole parameters) cut at owner boundaries, grouped by owner in rank
// order, with each owner's element count. For reduce-scatter and allgather buffers.
struct OwnedSlices {
  std::vector<ParamSlice> slices;          // owner 0's first, then owner 1's, ...
  std::vector<std::int64_t> owner_elems;   // per rank
};
OwnedSlices slices_by_owner(const ModelTrace& trace, const ZeroPartition& part, const std::vector<std::size_t>& params);

// The slices of a byte range [begin, end) of the flat space, cut at owner boundaries, in owner order.
std::vector<ParamSlice> slices_in_range(const ModelTrace& trace, const ZeroPartition& part, std::int64_t begin,
                                        std::int64_t end);

}  // namespace redsim
