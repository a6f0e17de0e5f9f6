// One pass of a ring over any group of ranks: reduce-scatter steps, allgather steps, or both.
// The building block of ring allreduce, reduce-scatter and allgather, and of the intra- and
// inter-node phases of hierarchical allreduce.
//
// The buffer is split into one chunk per ring position (sizes may differ, even be zero). In
// reduce-scatter step k the rank at position p sends chunk p-k and receives (and reduces) chunk
// p-k-1; after N-1 steps it holds the reduced chunk p+1. In allgather step k it sends chunk
// p+1-k and receives chunk p-k; it starts from chunk p+1. So "the chunk a rank owns" is the
// chunk one past its position, in both directions.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "core/plan.h"
#include "sim/sim_collective.h"
#include "sim/sim_context.h"

namespace redsim {

// Mailbox namespaces, so that consecutive phases of one collective never match each other's
// messages (a fast rank may start phase 2 while its peer still receives in phase 1).
enum class MailPhase : int { ring = 0, intra_scatter = 1, inter_ring = 2, intra_gather = 3, tree_up = 4, tree_down = 5, chain = 6, tree_up_right = 7, binomial = 8, pat = 9 };

struct RingPass {
  std::vector<int> ring;                 // ranks in ring order
  int pos = 0;                           // this rank's position in `ring`
  std::vector<std::int64_t> chunk_bytes;  // one per position
  bool reduce_scatter = true;
  bool allgather = true;
  MailPhase phase = MailPhase::ring;
};

TransferTally run_ring_pass(SimContext& ctx, const PlanOp& op, int channel, const RingPass& pass);

// How many loops a ring of these chunks runs under the protocol's chunk size (NCCL's loopSize
// = channels x ranks x chunk): 1 for ideal collectives.
int ring_loops(const Mechanics& m, const std::vector<std::int64_t>& chunk_bytes);

// Chunk sizes so that after reduce-scatter the rank at each position owns the given shard:
// chunk j belongs to the rank at position j-1.
std::vector<std::int64_t> chunks_for_shards(const std::vector<int>& ring, const std::vector<std::int64_t>& shard_of_rank);

// The bytes of each rank's shard for a reduce_scatter or allgather op (op.shard_bytes, or an
// even split of op.bytes).
std::vector<std::int64_t> op_shards(const PlanOp& op, int world);

// Runs `body(channel)` for every channel of the op concurrently (one actor each, channel 0 in
// the calling actor) and sums their tallies.
TransferTally run_channels(int rank, int channels, const std::function<TransferTally(int)>& body);

}  // namespace redsim
