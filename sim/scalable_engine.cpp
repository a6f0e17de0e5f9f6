#include "sim/scalable_engine.h"

#include "sim/grouped_collectives.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <string>
#include <unordered_map>
#include <vector>

#include <simgrid/s4u.hpp>
#include <xbt/log.h>

#include "sim/interference.h"
#include "collectives/reduction_work.h"
#include "sim/platform.h"
#include "sim/scalable_flows.h"
#include "sim/scalable_model.h"

namespace redsim {
namespace sg4 = simgrid::s4u;

namespace {

// A grouped collective (sim/grouped_collectives.h): every group at once, as its simulation
// alone says; each member ends when its place in the group did.
void run_grouped(const PlanOp& op, const GroupedTiming& g, double ready_s, std::vector<double>& end_s,
                 std::vector<std::int64_t>& sent, std::vector<std::int64_t>& received) {
  double longest_s = 0;
  for (double d : g.duration_s) longest_s = std::max(longest_s, d);
  if (longest_s > 0) sg4::this_actor::sleep_for(longest_s);
  for (std::size_t r = 0; r < end_s.size(); ++r) {
    const auto i = static_cast<std::size_t>(group_member_index(op, static_cast<int>(r)));
    end_s[r] = ready_s + g.duration_s[i];
    sent[r] = g.bytes_sent[i];
    received[r] = g.bytes_received[i];
  }
}

// A tree allreduce too large for SimGrid flows is computed, not simulated: its duration, each
// rank's end offset and bytes depend only on its signature, so DDP's equal buckets compute it
// once (at 131,072 ranks a tree costs O(ranks) per channel).
struct ComputedOp {
  double duration_s = 0;
  std::vector<double> end_offset_s;
  std::vector<std::int64_t> sent, received;
};
using ComputedKey = std::tuple<std::int64_t, int, int, int, int, double, double, double, double, double, std::int64_t, int>;

bool is_computed_tree(const PlanOp& op, int world) {
  return op.kind == OpKind::allreduce && op.algorithm == Algorithm::tree && world - 1 > scalable::kMaxDataflowFlows;
}

ComputedKey computed_key(const PlanOp& op, const Mechanics& m) {
  return {op.bytes, op.channels, op.protocol ? static_cast<int>(*op.protocol) : -1, static_cast<int>(op.dtype),
          static_cast<int>(op.reduce_op), m.wire_factor, m.hop_latency_s[0], m.hop_latency_s[1], m.hop_latency_s[2],
          m.channel_cap_Bps, m.chunk_bytes, m.slices};
}

// A long chain's record (see run_chain): every rank ends with the chain; bytes as a default and
// the ranks that head or end a channel's chain, in wire bytes.
void set_chain_record(Timeline& tl, const PlanOp& op, OpTiming every_rank, const Mechanics& m,
                      const scalable::Model::ChainBytes& b) {
  every_rank.bytes_sent = wire_bytes(m, b.sent);
  every_rank.bytes_received = wire_bytes(m, b.received);
  std::vector<std::pair<int, OpTiming>> exceptions;
  for (const auto& [rank, sr] : b.exceptions) {
    OpTiming t = every_rank;
    t.bytes_sent = wire_bytes(m, sr.first);
    t.bytes_received = wire_bytes(m, sr.second);
    exceptions.emplace_back(rank, t);
  }
  tl.set_op_sparse(op.id, every_rank, std::move(exceptions));
}

// Streams that carry collectives run as flows (not grouped ones, which are simulated apart).
int collective_streams(const Plan& plan) {
  std::vector<char> has(plan.streams.size(), 0);
  for (const auto& op : plan.ops)
    if (op_kind_is_collective(op.kind) && op.group_size <= 0) has[op.stream] = 1;
  return static_cast<int>(std::count(has.begin(), has.end(), 1));
}

// One step of a Plan on the flow platform: every rank runs the same ops (SPMD), and a
// collective starts only when all ranks have issued it, so one actor per stream stands for
// every rank.
class StepRun {
 public:
  StepRun(const Plan& plan, const ClusterSpec& cluster, scalable::Model& model, const FlowPlatform& fp,
          const GroupedTimings& grouped, int chain_rank_ends_max_ranks)
      : plan_(plan),
        cluster_(cluster),
        model_(model),
        fp_(fp),
        grouped_(grouped),
        chain_rank_ends_max_ranks_(chain_rank_ends_max_ranks),
        world_(plan.world_size),
        tl_(Timeline::folded("simulated", plan.world_size, plan.ops.size())),
        done_(plan.ops.size(), 0),
        mutex_(sg4::Mutex::create()),
        cv_(sg4::ConditionVariable::create()),
        stream_ops_(plan.streams.size()),
        isolated_(collective_streams(plan) <= 1),
        device_(cluster.interference, cluster.device.sm_count),
        reduction_s_(reduction_s_by_op(plan, cluster)) {
    for (const auto& op : plan.ops) stream_ops_[op.stream].push_back(op.id);
  }

  Timeline run(sg4::Engine& engine) {
    for (std::size_t s = 0; s < plan_.streams.size(); ++s)
      if (!stream_ops_[s].empty())
        sg4::Actor::create("stream:" + plan_.streams[s], fp_.sink, [this, s] { stream_loop(s); });
    engine.run();
    return std::move(tl_);
  }

 private:
  // Per-rank scratch of one stream, reused across its ops.
  struct Scratch {
    std::vector<double> end_s;
    std::vector<std::int64_t> sent, received;
    std::vector<OpTiming> row;
  };

  // per_rank = false: the channels' time only (a chain past chain_rank_ends_max_ranks).
  void run_channels(const PlanOp& op, Scratch& s, bool per_rank = true) {
    const int C = op.channels;
    std::vector<std::vector<scalable::Stage>> stages(static_cast<std::size_t>(C));
    std::vector<scalable::ChannelRun> runs(static_cast<std::size_t>(C));
    auto body = [&](int c) {
      stages[static_cast<std::size_t>(c)] = model_.channel_stages(op, c);
      run_stages(stages[static_cast<std::size_t>(c)], model_.routes(), fp_, runs[static_cast<std::size_t>(c)]);
    };
    // Channels progress independently, as in the exact fidelity: one actor each.
    std::vector<sg4::ActorPtr> helpers;
    for (int c = 1; c < C; ++c)
      helpers.push_back(sg4::Actor::create("op" + std::to_string(op.id) + "ch" + std::to_string(c), fp_.sink, [&body, c] { body(c); }));
    body(0);
    for (auto& h : helpers) h->join();
    if (!per_rank) return;
    for (int c = 0; c < C; ++c) {
      model_.merge_rank_ends(op, c, stages[static_cast<std::size_t>(c)], runs[static_cast<std::size_t>(c)], s.end_s);
      model_.add_rank_bytes(op, c, s.sent, s.received);
    }
  }

  void run_collective(const PlanOp& op, Scratch& s) {
    if (!is_computed_tree(op, world_)) return run_channels(op, s);
    const double start = sg4::Engine::get_clock();
    const auto key = computed_key(op, model_.mech(op));
    if (auto it = computed_.find(key); it != computed_.end()) {
      const ComputedOp& c = it->second;
      if (c.duration_s > 0) sg4::this_actor::sleep_for(c.duration_s);
      for (std::size_t r = 0; r < s.end_s.size(); ++r) s.end_s[r] = start + c.end_offset_s[r];
      s.sent = c.sent;
      s.received = c.received;
      return;
    }
    run_channels(op, s);
    ComputedOp c{sg4::Engine::get_clock() - start, std::vector<double>(s.end_s.size()), s.sent, s.received};
    for (std::size_t r = 0; r < s.end_s.size(); ++r) c.end_offset_s[r] = s.end_s[r] - start;
    computed_.emplace(key, std::move(c));
  }

  // A chain past chain_rank_ends_max_ranks: every rank is recorded ending when the chain ends
  // (in this engine its next op waits for that anyway), so the op keeps one record and the few
  // ranks whose bytes differ (Timeline::set_op_sparse). While the plan's collectives share one
  // stream nothing else is on the network, so a chain equal to an earlier one in size, protocol
  // and root placement takes the time that one took: ZeRO's reduce per owner at 131,072 ranks
  // simulates a few dozen chains, not one per owner.
  void run_chain(const PlanOp& op, Scratch& s) {
    const double start = sg4::Engine::get_clock();
    ChainKey key;
    if (isolated_) {
      key = {computed_key(op, model_.mech(op)), static_cast<int>(op.kind), model_.chain_shape_key(op), op.rendezvous};
      if (auto it = chain_took_s_.find(key); it != chain_took_s_.end()) {
        if (it->second > 0) sg4::this_actor::sleep_for(it->second);
        return;
      }
    }
    run_channels(op, s, false);
    if (isolated_) chain_took_s_.emplace(std::move(key), sg4::Engine::get_clock() - start);
  }

  void wait_for_deps(const PlanOp& op) {
    // Deps finish for good: a cursor past the finished ones (ZeRO's optimizer waits on a
    // reduce per owner; rescanning them at each wake-up would cost ranks squared).
    std::size_t next_dep = 0;
    std::unique_lock<sg4::Mutex> lock(*mutex_);
    cv_->wait(lock, [&] {
      while (next_dep < op.deps.size() && done_[op.deps[next_dep]]) ++next_dep;
      return next_dep == op.deps.size();
    });
  }

  bool is_long_chain(const PlanOp& op) const {
    return op_kind_is_collective(op.kind) && op.group_size <= 0 && world_ > chain_rank_ends_max_ranks_ &&
           (op.kind == OpKind::reduce || (op.kind == OpKind::broadcast && op.algorithm != Algorithm::binomial));
  }

  // Runs the op's work on the engine's clock; returns when its network part ends.
  double run_op(const PlanOp& op, double ready, bool long_chain, Scratch& s) {
    const bool collective = op_kind_is_collective(op.kind);
    if (collective && op.group_size > 0) {
      run_grouped(op, grouped_.at(op.id), ready, s.end_s, s.sent, s.received);
    } else if (collective) {
      // The host's launch, then the protocol's base latency (NCCL's baseLat), then the steps.
      const auto& mech = model_.mech(op);
      if (const double t = cluster_.launch_us(op.kind, op.channels) * 1e-6 + mech.base_latency_s; t > 0) sg4::this_actor::sleep_for(t);
      device_.run_reduction(reduction_s_[op.id]);  // a CPU rank's (collectives/reduction_work.h)
      if (world_ > 1 && long_chain) run_chain(op, s);
      else if (world_ > 1) run_collective(op, s);
    } else {
      device_.run_compute(op.duration_s);
    }
    return sg4::Engine::get_clock();
  }

  void record_op(const PlanOp& op, double ready, double network_end, double end, bool long_chain, Scratch& s) {
    const bool collective = op_kind_is_collective(op.kind);
    // Grouped ops come with wire bytes already.
    const Mechanics op_mech = collective && op.group_size <= 0 ? model_.mech(op) : Mechanics{};
    if (long_chain) {
      set_chain_record(tl_, op, OpTiming{ready, ready, end, 0, 0}, op_mech, model_.chain_rank_bytes(op));
      return;
    }
    // Set whole, so equal ranks fold (core/timeline.h); `row` is reused across ops.
    for (int r = 0; r < world_; ++r) {
      const auto i = static_cast<std::size_t>(r);
      auto& t = s.row[i];
      t.ready_s = ready;
      t.start_s = ready;
      // A rank that leaves a chain or tree early is shown ending early, but its next op waits
      // for the collective's slowest rank (see sim/README.md).
      // Interference's make-up time (end - network_end) comes after each rank's network part.
      t.end_s = collective && world_ > 1 ? std::min(end, std::max(ready, s.end_s[i]) + (end - network_end)) : end;
      // Payload counted per rank, converted to wire bytes once, as the exact fidelity does.
      t.bytes_sent = wire_bytes(op_mech, s.sent[i]);
      t.bytes_received = wire_bytes(op_mech, s.received[i]);
    }
    tl_.set_op(op.id, s.row);
  }

  void stream_loop(std::size_t stream) {
    const auto W = static_cast<std::size_t>(world_);
    Scratch s{std::vector<double>(W), std::vector<std::int64_t>(W), std::vector<std::int64_t>(W), std::vector<OpTiming>(W)};
    for (auto id : stream_ops_[stream]) {
      const auto& op = plan_.ops[id];
      wait_for_deps(op);
      const double ready = sg4::Engine::get_clock();
      const bool collective = op_kind_is_collective(op.kind);
      const bool long_chain = is_long_chain(op);
      if (!long_chain) {
        std::fill(s.end_s.begin(), s.end_s.end(), 0.0);
        std::fill(s.sent.begin(), s.sent.end(), 0);
        std::fill(s.received.begin(), s.received.end(), 0);
      }
      const auto mark = collective ? device_.begin_collective(sm_blocks(op, world_)) : DeviceActivity::Mark{};
      const double network_end = run_op(op, ready, long_chain, s);
      if (collective) device_.finish_collective(mark);
      record_op(op, ready, network_end, sg4::Engine::get_clock(), long_chain, s);
      {
        std::unique_lock<sg4::Mutex> lock(*mutex_);
        done_[id] = 1;
      }
      cv_->notify_all();
    }
  }

  using ChainKey = std::tuple<ComputedKey, int, std::vector<int>, bool>;  // + kind, root placement, rendezvous

  const Plan& plan_;
  const ClusterSpec& cluster_;
  scalable::Model& model_;
  const FlowPlatform& fp_;
  const GroupedTimings& grouped_;
  const int chain_rank_ends_max_ranks_;
  const int world_;
  Timeline tl_;
  std::vector<char> done_;
  sg4::MutexPtr mutex_;
  sg4::ConditionVariablePtr cv_;
  std::vector<std::vector<std::uint32_t>> stream_ops_;
  const bool isolated_;
  // Every rank's device is alike (SPMD): one activity stands for all, and shares it among the
  // compute ops of its streams, as the exact fidelity's hosts do (sim/interference.h).
  DeviceActivity device_;
  const std::vector<double> reduction_s_;  // by op: a CPU rank's reductions, before the network part
  std::map<ComputedKey, ComputedOp> computed_;
  std::map<ChainKey, double> chain_took_s_;
};

}  // namespace

Timeline simulate_scalable_in_process(const Plan& plan, const ClusterSpec& cluster, bool sim_log, bool allow_fold,
                                      const GroupedTimings& grouped, int chain_rank_ends_max_ranks) {
  if (!sim_log) xbt_log_control_set("root.thresh:critical");
  int argc = 1;
  char arg0[] = "redsim";
  char* argv[] = {arg0, nullptr};
  sg4::Engine engine(&argc, argv);
  configure_engine(engine);

  scalable::Model model(plan, cluster, allow_fold);
  for (const auto& op : plan.ops)
    if (op_kind_is_collective(op.kind) && op.group_size <= 0) model.prepare(op);
  const FlowPlatform fp = build_flow_platform(cluster, model.routes());
  return StepRun(plan, cluster, model, fp, grouped, chain_rank_ends_max_ranks).run(engine);
}

}  // namespace redsim
