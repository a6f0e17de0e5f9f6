// zero --zero-impl pytorch: PyTorch's ZeroRedundancyOptimizer (torch.distributed.optim) over DDP,
// as torch 1.13 runs it with its defaults (parameters_as_bucket_view=False, overlap_with_ddp=False):
// DDP reduces the gradients in its buckets as bucketed does; each rank steps the optimizer on the
// parameters it owns; then every parameter is broadcast from its owner, rank 0's first, one
// broadcast per parameter (_sync_params). Owners: trainable parameters sorted by size, largest
// first (a stable sort), each given to the rank with the fewest elements so far, the lowest such
// rank on a tie (_partition_parameters, _get_min_index).
#pragma once
#include <vector>

#include "core/cluster.h"
#include "core/knobs.h"
#include "core/plan.h"
#include "core/trace.h"

namespace redsim {

// Gloo's binomial broadcasts are simulated edge by edge: plans on ideal-collective (Gloo) clusters
// are refused beyond this many ranks.
inline constexpr int kMaxBinomialRanks = 4096;

// Per rank, the parameters (indices into trace.params) it owns, in the order it broadcasts them.
std::vector<std::vector<std::size_t>> zero_redundancy_partition(const ModelTrace& trace, int world);

Plan build_pytorch_zero(const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& knobs);

}  // namespace redsim
