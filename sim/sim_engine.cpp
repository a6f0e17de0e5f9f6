#include "sim/sim_engine.h"

#include "collectives/pat_rounds.h"

#include <cmath>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include <simgrid/s4u.hpp>
#include <xbt/log.h>

#include "core/error.h"
#include "sim/child_process.h"
#include "sim/grouped_collectives.h"
#include "sim/interference.h"
#include "collectives/reduction_work.h"
#include "sim/platform.h"
#include "sim/ring_pass.h"
#include "sim/scalable_engine.h"
#include "sim/sim_collective.h"
#include "sim/sim_context.h"

namespace redsim {
namespace sg4 = simgrid::s4u;

std::string_view fidelity_name(Fidelity f) {
  switch (f) {
    case Fidelity::exact:
      return "exact";
    case Fidelity::scalable:
      return "scalable";
    case Fidelity::auto_select:
      return "auto";
  }
  return "?";
}

Fidelity parse_fidelity(std::string_view name) {
  if (name == "exact") return Fidelity::exact;
  if (name == "scalable") return Fidelity::scalable;
  if (name == "auto") return Fidelity::auto_select;
  throw InputError("", "", "unknown fidelity \"" + std::string(name) + "\" (expected exact, scalable or auto)");
}

std::int64_t estimated_exact_transfers(const Plan& plan, const ClusterSpec& cluster) {
  if (plan.world_size < 2) return 0;
  const std::int64_t d = cluster.devices_per_node, m = cluster.nodes;
  std::int64_t total = 0;
  for (const auto& op : plan.ops) {
    if (!op_kind_is_collective(op.kind)) continue;
    // A grouped op is simulated for one group (sim/grouped_collectives.h).
    const std::int64_t n = group_ranks(op, plan.world_size);
    if (n < 2) continue;
    const auto mech = mechanics_of(op, cluster, plan.world_size);
    const std::int64_t channel_bytes = split_piece(op.bytes, op.channels, 0);
    const std::int64_t chunks = mech.chunks(channel_bytes);
    // Ring steps repeat per loop and slice (collectives/collective_model.h).
    const std::int64_t ring_rounds =
        ring_loops(mech, {channel_bytes / std::max<std::int64_t>(1, n)}) * std::max(1, mech.slices);
    std::int64_t per_channel = 0;
    switch (op.kind) {
      case OpKind::allreduce:
        if (op.algorithm == Algorithm::tree)
          per_channel = 2 * (n - 1) * chunks;
        else if (op.algorithm == Algorithm::hierarchical)
          per_channel = (2 * (d - 1) * d * m + 2 * (m - 1) * m * d) * ring_rounds;
        else if (op.algorithm == Algorithm::nvls || op.algorithm == Algorithm::nvls_tree)
          per_channel = 2 * n * chunks;
        else
          per_channel = 2 * (n - 1) * n * ring_rounds;
        break;
      case OpKind::reduce_scatter:
      case OpKind::allgather:
        per_channel = op.algorithm == Algorithm::pat ? n * pat_round_count(static_cast<int>(n)) : (n - 1) * n * ring_rounds;
        break;
      default:  // reduce, broadcast: a pipelined chain
        per_channel = (n - 1) * chunks;
        break;
    }
    total += per_channel * op.channels;
  }
  return total;
}

Fidelity resolve_fidelity(const Plan& plan, const ClusterSpec& cluster, Fidelity requested) {
  if (requested != Fidelity::auto_select) return requested;
  if (plan.world_size <= kAutoExactMaxRanks && estimated_exact_transfers(plan, cluster) <= kAutoExactMaxTransfers)
    return Fidelity::exact;
  return Fidelity::scalable;
}

void check_plan_for_sim(const Plan& plan, const ClusterSpec& cluster) {
  if (plan.world_size != cluster.world_size())
    throw InputError("", "", "plan is for " + std::to_string(plan.world_size) + " ranks but the cluster has " +
                                 std::to_string(cluster.world_size()));
  for (const auto& op : plan.ops) {
    for (auto d : op.deps)
      if (d >= op.id) throw std::logic_error("plan op " + op.name + " depends on a later op");
    if (op_kind_is_collective(op.kind)) {
      if (!op.rendezvous && op.group_size > 0) throw std::logic_error("plan op " + op.name + " is grouped but has no rendezvous");
      if (!group_is_valid(op, plan.world_size))
        throw std::logic_error("plan op " + op.name + " has groups that do not split the world evenly");
      sim_collective_for(op);
      if (op.channels < 1) throw std::logic_error("plan op " + op.name + " has no channel");
      if ((op.kind == OpKind::reduce || op.kind == OpKind::broadcast) && (op.root < 0 || op.root >= plan.world_size))
        throw std::logic_error("plan op " + op.name + " has no valid root");
      if (!op.shard_bytes.empty()) {
        std::int64_t sum = 0;
        for (auto b : op.shard_bytes) sum += b;
        if (op.shard_bytes.size() != static_cast<std::size_t>(group_ranks(op, plan.world_size)) || sum != op.bytes)
          throw std::logic_error("plan op " + op.name + " has shards that do not add up to its bytes");
      }
    }
  }
}

void check_timeline_complete(const Plan& plan, const Timeline& tl) {
  for (std::size_t id = 0; id < plan.ops.size(); ++id)
    for (const OpTiming& t : tl.op_records(id)) {  // a stored record stands for one rank or several
      if (std::isfinite(t.end_s) && t.ready_s >= 0 && t.start_s >= t.ready_s && t.end_s >= t.start_s) continue;
      int r = 0;
      while (r + 1 < tl.world_size && !(tl.at(r, id) == t)) ++r;
      throw std::runtime_error("the simulation did not finish op " + plan.ops[id].name + " on rank " +
                               std::to_string(r) + " (ready " + std::to_string(t.ready_s) + " s, start " +
                               std::to_string(t.start_s) + " s, end " + std::to_string(t.end_s) + " s)");
    }
}

std::int64_t timeline_records(const Plan& plan, Fidelity used, int chain_rank_ends_max_ranks) {
  const std::int64_t n = plan.world_size;
  if (used == Fidelity::exact) return static_cast<std::int64_t>(plan.ops.size()) * n;  // every rank is simulated
  // Scalable: an op whose ranks all end together keeps one record (core/timeline.h). Trees and
  // grouped ops end by depth or group member, a few distinct records indexed per rank: 2 bytes a
  // rank, counted as a twentieth of a 40-byte record. Chains end rank by rank: a record each,
  // past chain_rank_ends_max_ranks one and a head and tail per channel.
  std::int64_t records = 0;
  for (const auto& op : plan.ops) {
    if (!op_kind_is_collective(op.kind)) {
      records += 1;
    } else if (op.kind == OpKind::reduce || op.kind == OpKind::broadcast) {
      records += n > chain_rank_ends_max_ranks ? 1 + 2 * op.channels : n;
    } else if (op.group_size > 0 || op.algorithm == Algorithm::tree || op.algorithm == Algorithm::nvls_tree) {
      const bool indexable = op.group_size <= 0 || op.group_size <= std::min<std::int64_t>(65535, n / 4);
      // Up to 64 distinct records (a tree's depths; a group's members), never more than n.
      records += indexable ? std::min(n, (n + 19) / 20 + std::max<std::int64_t>(op.group_size, 64)) : n;
    } else {
      records += 1;
    }
  }
  return records;
}

void check_sim_work(const Plan& plan, const ClusterSpec& cluster, Fidelity used, int chain_rank_ends_max_ranks) {
  const std::int64_t instances = timeline_records(plan, used, chain_rank_ends_max_ranks);
  if (instances > plan.max_ops)
    throw InputError("", "", "the plan has " + std::to_string(plan.ops.size()) + " ops on each of " +
                                 std::to_string(plan.world_size) + " ranks (" + std::to_string(instances) +
                                 " op instances to record at " + std::string(fidelity_name(used)) +
                                 " fidelity), over the limit of " + std::to_string(plan.max_ops) +
                                 " (--max-ops): use larger buckets or fewer ranks, or raise --max-ops");
  if (used != Fidelity::exact) return;
  const std::int64_t transfers = estimated_exact_transfers(plan, cluster);
  if (transfers > plan.max_ops)
    throw InputError("", "", "the exact fidelity would simulate about " + std::to_string(transfers) +
                                 " transfers, over the limit of " + std::to_string(plan.max_ops) +
                                 " (--max-ops): use --fidelity scalable or auto, or raise --max-ops");
}

namespace {

// Per-rank completion flags; stream actors of a rank wait on them for cross-stream dependencies.
struct RankState {
  std::vector<char> done;
  sg4::MutexPtr mutex = sg4::Mutex::create();
  sg4::ConditionVariablePtr cv = sg4::ConditionVariable::create();
};

}  // namespace

namespace {

// A collective starts when every rank of its group (the world, without a group) has reached it:
// one barrier per group, by group_index.
std::vector<std::vector<sg4::BarrierPtr>> collective_barriers(const Plan& plan) {
  std::vector<std::vector<sg4::BarrierPtr>> barriers(plan.ops.size());
  for (const auto& op : plan.ops) {
    const int size = group_ranks(op, plan.world_size);
    if (!op_kind_is_collective(op.kind) || size < 2 || !op.rendezvous) continue;
    for (int g = 0; g < plan.world_size / size; ++g) barriers[op.id].push_back(sg4::Barrier::create(static_cast<unsigned>(size)));
  }
  return barriers;
}

// A grouped collective: the member waits for its group, then takes as long as its place in the
// group took when the group was simulated alone (sim/grouped_collectives.h).
void run_grouped(const PlanOp& op, int rank, int world, const std::vector<sg4::BarrierPtr>& barriers,
                 const GroupedTiming& g, OpTiming& t, DeviceActivity* device) {
  if (!barriers.empty()) barriers[static_cast<std::size_t>(group_index(op, rank))]->wait();
  t.start_s = sg4::Engine::get_clock();
  const auto mark = device ? device->begin_collective(sm_blocks(op, world)) : DeviceActivity::Mark{};
  const auto i = static_cast<std::size_t>(group_member_index(op, rank));
  if (g.duration_s[i] > 0) sg4::this_actor::sleep_for(g.duration_s[i]);
  if (device) device->finish_collective(mark);
  t.bytes_sent = g.bytes_sent[i];
  t.bytes_received = g.bytes_received[i];
}

// A collective on one rank: the host's launch, then the protocol's base latency (NCCL's
// baseLat), a CPU rank's reductions, then the steps. Without a rendezvous the rank starts at
// once: its peers' mailboxes are first in, first out, so its transfers match the peer's
// transfers of the same op even while that peer is still in the previous one.
void run_collective(const PlanOp& op, int rank, SimContext& ctx, const std::vector<sg4::BarrierPtr>& barriers,
                    double reduction_s, OpTiming& t, DeviceActivity* device) {
  if (!barriers.empty()) barriers[0]->wait();
  t.start_s = sg4::Engine::get_clock();
  const auto mark = device ? device->begin_collective(sm_blocks(op, ctx.plan.world_size)) : DeviceActivity::Mark{};
  const auto& mech = ctx.mechanics(op);
  if (const double s = ctx.cluster.launch_us(op.kind, op.channels) * 1e-6 + mech.base_latency_s; s > 0) sg4::this_actor::sleep_for(s);
  if (device) device->run_reduction(reduction_s);
  auto tally = sim_collective_for(op).run(op, rank, ctx);
  if (device) device->finish_collective(mark);
  t.bytes_sent = ctx.wire_bytes(mech, tally.bytes_sent);
  t.bytes_received = ctx.wire_bytes(mech, tally.bytes_received);
}

// Each rank's device activity, where compute needs more than a plain execution: interference,
// or a CPU rank, whose reductions share it with compute (sim/interference.h,
// collectives/reduction_work.h). Without them a GPU's compute is a plain execution, as before:
// a rank's host shares it among the rank's streams, as a device's activity does.
struct RankDevices {
  std::vector<DeviceActivity> activity;  // empty: plain executions
  std::vector<double> reduction_s;       // by op: a CPU rank's reductions
};
RankDevices rank_devices(const Plan& plan, const ClusterSpec& cluster) {
  RankDevices d;
  d.reduction_s = reduction_s_by_op(plan, cluster);
  if (!cluster.interference.active() && !reductions_share_cpu(cluster)) return d;
  d.activity.reserve(static_cast<std::size_t>(plan.world_size));
  for (int r = 0; r < plan.world_size; ++r) d.activity.emplace_back(cluster.interference, cluster.device.sm_count);  // a mutex each
  return d;
}

Timeline simulate_exact_in_process(const Plan& plan, const ClusterSpec& cluster, const SimOptions& options,
                                   const GroupedTimings& grouped) {
  if (!options.sim_log) xbt_log_control_set("root.thresh:critical");
  int argc = 1;
  char arg0[] = "redsim";
  char* argv[] = {arg0, nullptr};
  sg4::Engine engine(&argc, argv);
  configure_engine(engine);

  RankPairs pairs;
  for (const auto& op : plan.ops)
    if (op_kind_is_collective(op.kind) && op.group_size <= 0) sim_collective_for(op).add_pairs(op, cluster, pairs);
  SimContext ctx{plan, cluster, build_platform(cluster, pairs)};

  const int world = plan.world_size;
  Timeline tl("simulated", world, plan.ops.size());
  std::vector<RankState> ranks(static_cast<std::size_t>(world));
  for (auto& r : ranks) r.done.assign(plan.ops.size(), 0);
  auto devices = rank_devices(plan, cluster);
  const auto barriers = collective_barriers(plan);

  std::vector<std::vector<std::uint32_t>> stream_ops(plan.streams.size());
  for (const auto& op : plan.ops) stream_ops[op.stream].push_back(op.id);

  auto stream_loop = [&](int rank, std::size_t stream) {
    auto& rs = ranks[static_cast<std::size_t>(rank)];
    DeviceActivity* device = devices.activity.empty() ? nullptr : &devices.activity[static_cast<std::size_t>(rank)];
    for (auto id : stream_ops[stream]) {
      const auto& op = plan.ops[id];
      {
        std::unique_lock<sg4::Mutex> lock(*rs.mutex);
        rs.cv->wait(lock, [&] {
          for (auto d : op.deps)
            if (!rs.done[d]) return false;
          return true;
        });
      }
      auto& t = tl.mutable_at(rank, id);
      t.ready_s = sg4::Engine::get_clock();
      if (op_kind_is_collective(op.kind) && op.group_size > 0) {
        run_grouped(op, rank, plan.world_size, barriers[id], grouped.at(id), t, device);
      } else if (op_kind_is_collective(op.kind)) {
        run_collective(op, rank, ctx, barriers[id], devices.reduction_s[id], t, device);
      } else {
        t.start_s = t.ready_s;
        if (device)
          device->run_compute(op.duration_s);
        else if (op.duration_s > 0)
          sg4::this_actor::execute(op.duration_s * SimPlatform::kHostSpeedFlops);
      }
      t.end_s = sg4::Engine::get_clock();
      {
        std::unique_lock<sg4::Mutex> lock(*rs.mutex);
        rs.done[id] = 1;
      }
      rs.cv->notify_all();
    }
  };

  for (int r = 0; r < world; ++r)
    for (std::size_t s = 0; s < plan.streams.size(); ++s)
      if (!stream_ops[s].empty())
        sg4::Actor::create("rank" + std::to_string(r) + ":" + plan.streams[s], ctx.platform.hosts[static_cast<std::size_t>(r)],
                           [&stream_loop, r, s] { stream_loop(r, s); });
  engine.run();
  // SimGrid returns from a deadlock (or a clock overflow) as from a finished run: an op that
  // never ended is a failed simulation, never a result.
  for (int r = 0; r < world; ++r)
    for (std::size_t id = 0; id < plan.ops.size(); ++id)
      if (!ranks[static_cast<std::size_t>(r)].done[id])
        throw std::runtime_error("the simulation ended before op " + plan.ops[id].name + " finished on rank " +
                                 std::to_string(r) + " (SimGrid deadlock)");
  return tl;
}

}  // namespace

Timeline simulate_in_process(const Plan& plan, const ClusterSpec& cluster, const SimOptions& options) {
  SimOptions resolved = options;
  resolved.fidelity = resolve_fidelity(plan, cluster, options.fidelity);
  // Before this process's Engine exists: each group shape is simulated in a child of its own.
  const GroupedTimings grouped =
      plan_has_grouped_collectives(plan) ? simulate_grouped_collectives(plan, cluster, resolved) : GroupedTimings{};
  if (resolved.fidelity == Fidelity::scalable)
    return simulate_scalable_in_process(plan, cluster, options.sim_log, options.scalable_fold, grouped,
                                        options.chain_rank_ends_max_ranks);
  return simulate_exact_in_process(plan, cluster, options, grouped);
}

Timeline simulate(const Plan& plan, const ClusterSpec& cluster, const SimOptions& options) {
  check_plan_for_sim(plan, cluster);
  check_sim_work(plan, cluster, resolve_fidelity(plan, cluster, options.fidelity), options.chain_rank_ends_max_ranks);
  // Folded before it crosses the pipe: ranks with equal records send one (core/timeline.h).
  auto out = run_in_child([&] {
    Timeline result = simulate_in_process(plan, cluster, options);
    result.fold();
    return result.serialize();
  });
  Timeline tl = Timeline::folded("simulated", plan.world_size, plan.ops.size());
  tl.deserialize(out);
  check_timeline_complete(plan, tl);
  return tl;
}

}  // namespace redsim
