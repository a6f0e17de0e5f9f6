// NCCL's PAT (Parallel Aggregated Trees, 2.23+: allgather and reduce-scatter with one GPU a node)
// as both fidelities move its bytes. PAT is Bruck's allgather with its dimensions reversed
// (Jeaugey, "PAT: a new algorithm for all-gather and reduce-scatter operations at scale",
// arXiv:2506.20252; src/include/collectives.h PatAGAlgorithm, PatRSAlgorithm): each rank's share
// goes down a binomial tree whose first hop is the longest, so a round per halving of the
// distance, the farthest carrying one share and the nearest the most, and a rank sends n - 1
// shares in ceil(log2 n) rounds. In round i of the allgather (distance d = 2^(K-1-i), K rounds)
// rank r sends r - d the shares it holds, those at offsets 0, 2d, 4d, ... from it below n - d,
// and receives r + d's. NCCL's bounded buffers (aggregating fewer ranks a step when a share is
// large) and its pipelining of chunks within a round are not modelled (collectives/README.md).
// Reduce-scatter is the transpose: the rounds near to far, each transfer reversed, carrying
// partial sums of the shares it names.
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
