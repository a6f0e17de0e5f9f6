// How a Plan's collective maps onto a real buffer: its element count (after --buffer-scale),
// each rank's shard (reduce_scatter, allgather) and each channel's part. Channels split a
// buffer as the simulator does: channel c carries the c-th near-equal piece of the buffer, or,
// for reduce_scatter and allgather, the c-th piece of every rank's shard (so the result is the
// same whatever the channel count).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/plan.h"
#include "realexec/backend.h"

namespace redsim::realexec {

struct CollectiveLayout {
  std::uint32_t op = 0;
  std::int64_t elems = 0;            // elements in the buffer (scaled)
  std::int64_t elem_bytes = 0;       // wire dtype size
  std::vector<Segment> shards;       // per rank (reduce_scatter, allgather); empty otherwise
  std::vector<Segment> pieces;       // per channel: allreduce, reduce, broadcast
  std::vector<std::vector<Segment>> channel_shards;  // per channel, per rank: reduce_scatter, allgather

  std::int64_t bytes() const { return elems * elem_bytes; }
};

// Throws std::invalid_argument naming the op for a collective realexec cannot run (dtype,
// bytes not a whole number of elements, shard sizes that do not add up, bad root).
CollectiveLayout layout_collective(const PlanOp& op, int world_size, double buffer_scale);

// The plan as the communicators run it: a collective the model gave NCCL's own channel count
// (a request left on auto) is issued as one call, since the library splits it over its own
// channels (NCCL) or runs one ring (Gloo); a count the knobs pinned stays, one communicator each.
Plan plan_for_library(Plan plan);

// Checks the whole plan for this world size (every op as above, dependencies on earlier ops).
void check_plan_for_realexec(const Plan& plan, int world_size);

// Bytes of collective buffers one rank allocates at a buffer scale (each collective has its own).
std::int64_t collective_buffer_bytes(const Plan& plan, double buffer_scale);

// The plan as measured: every collective's bytes (and shard bytes) as actually moved at this scale.
Plan scaled_plan(const Plan& plan, double buffer_scale);

}  // namespace redsim::realexec
