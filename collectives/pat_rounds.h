// NCCL's PAT (Parallel Aggregated Trees, 2.23+: allgather and reduce-scatter with one GPU a node)
// as both fidelities move its bytes. PAT sends each rank's share down a binomial tree, all trees
// at once, aggregating what travels the same distance (src/include/collectives.h PatAGAlgorithm,
// PatRSAlgorithm): a round per doubling of the distance, each carrying shares to the rank that
// distance away, so a rank sends n - 1 shares in ceil(log2 n) rounds. redsim moves them as
// Bruck's allgather, which has those rounds and those bytes: in round k (distance d = 2^k) rank r
// sends the shares it holds, r .. r + min(d, n - d) - 1, to r - d and receives r + d's. NCCL's
// own order of distances and its pipelining of chunks within a round are not modelled
// (collectives/README.md). Reduce-scatter is the transpose: the rounds backwards, each transfer
// reversed, carrying partial sums of the shares it names.
#pragma once
#include <cstdint>
#include <vector>

#include "core/plan.h"

namespace redsim {

struct PatRound {
  int send_to = 0;
  std::int64_t send_bytes = 0;
  int recv_from = 0;
  std::int64_t recv_bytes = 0;
};

// ceil(log2 n): PAT's rounds on n ranks (0 for one rank).
int pat_round_count(int n);
// Rank `rank`'s rounds in the order it runs them, for `kind` (allgather or reduce_scatter) with
// `shares[r]` bytes belonging to rank r (its input for allgather, its output for reduce-scatter).
std::vector<PatRound> pat_rounds(OpKind kind, const std::vector<std::int64_t>& shares, int rank);

}  // namespace redsim
