// The Plan: the engine-agnostic schedule of one step (SPMD: every rank runs the same ops).
// Ops are listed in an order that is both topological and each stream's issue order, so an
// engine may run each stream as a FIFO queue of the ops that name it.
#pragma once
#include <array>
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/collective_types.h"
#include "core/dtype.h"

namespace redsim {

// framework: device time a training framework spends around its collectives (DDP's per-bucket
// hooks and launch, the copies into and out of its buckets), from the cluster's "framework" costs.
enum class OpKind { forward, backward, optimizer, allreduce, reduce, reduce_scatter, allgather, broadcast, framework };

std::string_view op_kind_name(OpKind k);
bool op_kind_is_collective(OpKind k);
// nccl-tests' five collectives, in its order (all_reduce_perf, reduce_scatter_perf, ...).
inline constexpr std::array<OpKind, 5> kNcclTestsKinds{OpKind::allreduce, OpKind::reduce_scatter, OpKind::allgather,
                                                       OpKind::broadcast, OpKind::reduce};
// The collective of kNcclTestsKinds named `name` as op_kind_name writes it, if any.
std::optional<OpKind> nccl_tests_kind_named(std::string_view name);

// A contiguous run of one parameter's elements carried by a collective.
struct ParamSlice {
  std::size_t param = 0;         // index into ModelTrace::params
  std::int64_t offset_elems = 0;  // within the parameter
  std::int64_t numel = 0;
};

struct PlanOp {
  std::uint32_t id = 0;  // == index in Plan::ops
  std::string name;      // e.g. "bwd:layer4.2.conv3", "allreduce:bucket3"
  OpKind kind = OpKind::forward;
  std::uint32_t stream = 0;  // index into Plan::streams
  std::vector<std::uint32_t> deps;

  // compute ops
  double duration_s = 0;  // already scaled to the cluster's device
  // Activations this op leaves saved when it ends (a layer's forward, +) or frees (its backward,
  // -): the timeline's activation memory counter. 0 when the trace does not give them.
  std::int64_t activation_delta_bytes = 0;

  // collectives
  std::int64_t bytes = 0;  // the buffer each rank contributes (wire dtype)
  DType dtype = DType::fp32;
  ReduceOp reduce_op = ReduceOp::sum;
  // What the engines run: the collective model's choice (or what a test sets directly).
  Algorithm algorithm = Algorithm::ring;
  std::optional<Protocol> protocol;  // unset: the cluster has no protocol model (ideal collectives)
  int channels = 1;
  CollectiveRequest request;  // what the knobs asked for (unset = the model's choice), for the record
  int root = -1;  // reduce/broadcast root; -1 when none
  int bucket = -1;  // bucket index for gradient collectives; -1 otherwise
  std::vector<ParamSlice> slices;
  // reduce_scatter and allgather: bytes of each rank's shard, in rank order. Empty means the
  // buffer splits evenly by elements (the first elements % N ranks get one element more), as
  // real buffers must. A zero entry is a rank that owns nothing of this buffer.
  std::vector<std::int64_t> shard_bytes;
  // The ranks the collective runs among (hsdp): the world splits into disjoint groups of
  // group_size ranks spaced group_stride apart, each running the collective on its own;
  // group_size 0 is the whole world. With a group, shard_bytes has one entry per group member.
  int group_size = 0;
  int group_stride = 1;
  // A collective starts once every rank of its group has issued it. false: each rank starts it
  // when its own stream reaches it and the transfers alone pace the ranks, as NCCL's kernels run
  // when a benchmark queues the same collective back to back (nccl-tests' iterations).
  bool rendezvous = true;
};

// Ranks in an op's group (the world when it has none).
int group_ranks(const PlanOp& op, int world_size);
// The members of `rank`'s group in ring order (member i at position i), rank included.
std::vector<int> group_members(const PlanOp& op, int world_size, int rank);
// Which of the op's world / group_size groups `rank` is in, and its place in that group (both
// 0 for an op without a group).
int group_index(const PlanOp& op, int rank);
int group_member_index(const PlanOp& op, int rank);
// Checks that the op's group splits `world_size` ranks evenly; false otherwise.
bool group_is_valid(const PlanOp& op, int world_size);

// What one rank holds in device memory for the model state, in bytes (ZeRO paper's accounting).
struct RankMemory {
  std::int64_t params_bytes = 0;
  std::int64_t grads_bytes = 0;
  std::int64_t optimizer_bytes = 0;
  std::int64_t comm_buffer_bytes = 0;  // bucket or flat buffers held in addition to gradients
  // What autograd saves in one forward (one micro-batch), all live when forward ends; 0 and
  // activations_known false when the trace does not give it.
  std::int64_t activation_bytes = 0;
  bool activations_known = false;
  // Buffers a step holds for a while after backward has freed the activations: LocalSGD's flat
  // copy of the parameters for the averaging, PowerSGD's copies of its buckets (strategies set it).
  std::int64_t step_buffer_bytes = 0;
  std::int64_t model_state_bytes() const { return params_bytes + grads_bytes + optimizer_bytes + comm_buffer_bytes; }
  // The most held at once beyond the model state: the activations in backward, or the step's
  // buffers after it, whichever is more.
  std::int64_t transient_bytes() const { return std::max(activation_bytes, step_buffer_bytes); }
  std::int64_t total_bytes() const { return model_state_bytes() + transient_bytes(); }
};

// The most work one simulation may take by default (README "Limits", --max-ops): op instances
// (plan ops x ranks, 40 bytes of timeline each) and, for the exact fidelity, transfers.
inline constexpr std::int64_t kDefaultMaxOps = 20'000'000;

struct Plan {
  std::string strategy;
  std::int64_t max_ops = kDefaultMaxOps;  // the limit above, as the knobs set it
  int world_size = 1;
  std::int64_t samples_per_step = 1;  // global batch of one optimizer step
  int steps = 1;                      // training steps the plan covers (LocalSGD windows, etc.)
  std::vector<std::string> streams;   // "compute", "comm0", ...
  std::vector<PlanOp> ops;
  RankMemory memory;  // peak model-state memory of the most loaded rank

  std::uint32_t add(PlanOp op);  // assigns the id
  std::uint32_t stream_index(std::string_view name);  // finds or adds
  bool stream_is_compute(std::uint32_t s) const { return streams[s] == "compute"; }
};

}  // namespace redsim
