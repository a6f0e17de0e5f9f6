#include "strategies/fsdp.h"

#include <algorithm>
#include <string>
#include <utility>

#include "core/error.h"
#include "strategies/fsdp_units.h"
#include "strategies/memory_model.h"
#include "strategies/step_builder.h"

namespace redsim {
namespace {

// Where the collectives of one sharded plan run: the shard group (all-gather, reduce-scatter)
// and, for hsdp, the replicas of a shard across groups (allreduce).
struct ShardLayout {
  int world = 1;
  int group = 1;  // ranks per shard group
  bool hybrid() const { return group < world; }
};

class ShardedPlanBuilder {
 public:
  ShardedPlanBuilder(Plan& plan, const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& knobs,
                     ShardLayout layout)
      : plan_(plan), trace_(trace), cluster_(cluster), knobs_(knobs), layout_(layout),
        units_(knobs.fsdp_wrap_blocks ? fsdp_block_units(trace, layout.group)
                                      : fsdp_units(trace, knobs.fsdp_wrap_elems, layout.group)),
        ckpt_(checkpoint_blocks(trace, knobs)),
        compute_scale_(1.0 / cluster.device.compute_speedup) {
    unit_of_layer_.resize(trace.layers.size());
    for (std::size_t u = 0; u < units_.size(); ++u)
      for (auto l : units_[u].layers) unit_of_layer_[l] = u;
    // FSDP's own streams: _unshard_stream for all-gathers, _post_backward_stream for
    // reduce-scatters (and PyTorch >= 2.2's _all_reduce_stream for HSDP's allreduce).
    ag_stream_ = plan_.stream_index("allgather");
    rs_stream_ = plan_.stream_index("reduce_scatter");
    if (layout_.hybrid()) ar_stream_ = plan_.stream_index("allreduce");
  }

  void build() {
    fwd_end_.resize(units_.size());
    bwd_end_.resize(units_.size());
    grads_done_.resize(units_.size());
    forward();
    backward();
    std::vector<std::uint32_t> deps;
    for (const auto& g : grads_done_) deps.insert(deps.end(), g.begin(), g.end());
    deps.push_back(bwd_end_.front());
    // Each rank steps the optimizer on its 1/G shard of every FlatParameter.
    add_optimizer(plan_, trace_, cluster_, deps, "", 1.0 / layout_.group);
    plan_.memory = memory();
  }

 private:
  std::uint32_t compute_op(OpKind kind, const std::string& name, double duration_s, std::vector<std::uint32_t> deps) {
    PlanOp op;
    op.kind = kind;
    op.name = name;
    op.stream = plan_.stream_index("compute");
    op.duration_s = duration_s * compute_scale_;
    op.deps = std::move(deps);
    return plan_.add(std::move(op));
  }

  PlanOp shard_collective(OpKind kind, const std::string& name, std::uint32_t stream, DType dtype, std::int64_t numel,
                          const std::vector<std::size_t>& params, std::vector<std::uint32_t> deps) const {
    PlanOp op;
    op.kind = kind;
    op.name = name;
    op.stream = stream;
    op.dtype = dtype;
    op.bytes = numel * dtype_size_bytes(dtype);
    op.reduce_op = knobs_.reduce_op;
    op.request = collective_request(knobs_);
    op.deps = std::move(deps);
    if (layout_.hybrid()) op.group_size = layout_.group;
    for (auto p : params) op.slices.push_back({p, 0, trace_.params[p].numel});
    return op;
  }

  // The all-gathers that unshard unit u (one per FlatParameter), in the unit's param dtype.
  std::vector<std::uint32_t> gather(std::size_t u, const std::string& pass, const std::vector<std::uint32_t>& deps) {
    std::vector<std::uint32_t> ids;
    for (std::size_t f = 0; f < units_[u].flats.size(); ++f) {
      const auto& flat = units_[u].flats[f];
      const std::string name = "allgather:" + pass + ":unit" + std::to_string(u) + (f ? "." + std::to_string(f) : "");
      ids.push_back(plan_.add(shard_collective(OpKind::allgather, name, ag_stream_, flat.dtype, flat.padded_numel,
                                               flat.params, deps)));
    }
    return ids;
  }

  // Unit u's gradients: reduce-scattered in the shard group (in the wire dtype, FSDP's
  // reduce_dtype) and, for hsdp, each shard allreduced across the groups.
  void reduce(std::size_t u) {
    for (std::size_t f = 0; f < units_[u].flats.size(); ++f) {
      const auto& flat = units_[u].flats[f];
      if (flat.grad_params.empty()) continue;
      const auto wire = knobs_.wire_dtype.value_or(flat.dtype);
      const std::string tag = "unit" + std::to_string(u) + (f ? "." + std::to_string(f) : "");
      auto rs = shard_collective(OpKind::reduce_scatter, "reduce_scatter:" + tag, rs_stream_, wire,
                                 flat.padded_grad_numel, flat.grad_params, {bwd_end_[u]});
      rs.bucket = static_cast<int>(u);
      const auto rs_id = plan_.add(std::move(rs));
      if (!layout_.hybrid()) {
        grads_done_[u].push_back(rs_id);
        continue;
      }
      auto ar = shard_collective(OpKind::allreduce, "allreduce:" + tag, ar_stream_, wire,
                                 flat.padded_grad_numel / layout_.group, flat.grad_params, {rs_id});
      ar.group_size = layout_.world / layout_.group;
      ar.group_stride = layout_.group;
      ar.bucket = static_cast<int>(u);
      grads_done_[u].push_back(plan_.add(std::move(ar)));
    }
  }

  void forward() {
    // limit_all_gathers: a unit is gathered once the unit before it is done (in step with the
    // device), or, with forward_prefetch, one unit ahead: at most two units unsharded.
    const std::size_t behind = knobs_.forward_prefetch ? 2 : 1;
    for (std::size_t u = 0; u < units_.size(); ++u) {
      std::vector<std::uint32_t> deps;
      if (u >= behind) deps.push_back(fwd_end_[u - behind]);
      auto ag = gather(u, "fwd", deps);
      bool first = true;
      for (auto l : units_[u].layers) {
        const auto& layer = trace_.layers[l];
        fwd_end_[u] = compute_op(OpKind::forward, "fwd:" + layer.name, layer.forward_s, first ? ag : std::vector<std::uint32_t>{});
        plan_.ops[fwd_end_[u]].activation_delta_bytes = ckpt_.forward_held_bytes(trace_, l);
        first = false;
      }
    }
  }

  // Unit u's backward all-gather waits per backward_prefetch: BACKWARD_PRE issues it when unit
  // u+1's backward starts, BACKWARD_POST when it ends, none after u+1's reduce-scatter too (one
  // communicator runs its collectives in issue order).
  std::vector<std::uint32_t> backward_gather_deps(std::size_t u) const {
    auto end_of = [&](std::size_t k) { return k < units_.size() ? bwd_end_[k] : fwd_end_.back(); };
    switch (knobs_.backward_prefetch) {
      case BackwardPrefetch::backward_pre:
        return {end_of(u + 2)};
      case BackwardPrefetch::backward_post:
        return {end_of(u + 1)};
      case BackwardPrefetch::none: {
        std::vector<std::uint32_t> deps{end_of(u + 1)};
        if (u + 1 < units_.size()) deps.insert(deps.end(), grads_done_[u + 1].begin(), grads_done_[u + 1].end());
        return deps;
      }
    }
    return {};
  }

  void backward() {
    for (std::size_t u = units_.size(); u-- > 0;) {
      std::vector<std::uint32_t> pending;  // what the unit's next compute op waits for
      if (knobs_.reshard_after_forward) pending = gather(u, "bwd", backward_gather_deps(u));
      const auto& layers = units_[u].layers;
      for (auto it = layers.rbegin(); it != layers.rend(); ++it) {
        if (const auto* block = ckpt_.block_ending_at(*it)) recompute(*block, u, pending);
        const auto& layer = trace_.layers[*it];
        bwd_end_[u] = compute_op(OpKind::backward, "bwd:" + layer.name, layer.backward_s, std::exchange(pending, {}));
        plan_.ops[bwd_end_[u]].activation_delta_bytes = -ckpt_.backward_freed_bytes(trace_, *it);
      }
      reduce(u);
    }
  }

  // A checkpointed block runs its forward again before its backward (in unit u, which holds its
  // last layer). The units it spans before u are resharded since their forward, so FSDP's
  // pre-forward hooks gather them again for the recompute (issued with u's backward gather).
  void recompute(const CheckpointBlock& block, std::size_t u, std::vector<std::uint32_t>& pending) {
    if (knobs_.reshard_after_forward)
      for (std::size_t v = unit_of_layer_[block.first_layer]; v < u; ++v) {
        const auto ids = gather(v, "recompute", backward_gather_deps(u));
        pending.insert(pending.end(), ids.begin(), ids.end());
      }
    const auto r = compute_op(OpKind::backward, "recompute:" + block.name, block.forward_s, std::exchange(pending, {}));
    plan_.ops[r].activation_delta_bytes = block.recompute_bytes;
  }

  // ZeRO-3's model state over the shard group, plus what is live unsharded at the peak: the
  // units being computed and prefetched (every unit without resharding) and one unit's
  // unsharded gradient waiting for its reduce-scatter.
  RankMemory memory() const {
    std::int64_t unit_params = 0, all_params = 0, unit_grads = 0;
    std::int64_t stepped = 0, largest = 0;  // the optimizer steps this rank's shard of every FlatParameter
    for (const auto& u : units_) {
      unit_params = std::max(unit_params, u.param_bytes());
      all_params += u.param_bytes();
      unit_grads = std::max(unit_grads, u.grad_bytes());
      for (const auto& f : u.flats) {
        stepped += f.padded_grad_numel / layout_.group;
        largest = std::max(largest, f.padded_grad_numel / layout_.group);
      }
    }
    const bool prefetch = knobs_.forward_prefetch || knobs_.backward_prefetch != BackwardPrefetch::none;
    std::int64_t live = knobs_.reshard_after_forward ? (prefetch ? 2 : 1) * unit_params : all_params;
    // A checkpointed block's recompute holds every unit it spans unsharded at once.
    if (knobs_.reshard_after_forward)
      for (const auto& b : ckpt_.blocks) {
        std::int64_t spanned = 0;
        for (auto v = unit_of_layer_[b.first_layer]; v <= unit_of_layer_[b.last_layer]; ++v) spanned += units_[v].param_bytes();
        live = std::max(live, spanned + (prefetch ? unit_params : 0));
      }
    RankMemory m = model_state_memory(trace_, layout_.group, 3, live + unit_grads);
    m.step_buffer_bytes = optimizer_step_bytes(resolved_optimizer_impl(knobs_, cluster_), stepped, largest);
    return m;
  }

  Plan& plan_;
  const ModelTrace& trace_;
  const ClusterSpec& cluster_;
  const Knobs& knobs_;
  ShardLayout layout_;
  std::vector<FsdpUnit> units_;
  Checkpointing ckpt_;
  std::vector<std::size_t> unit_of_layer_;
  double compute_scale_;
  std::uint32_t ag_stream_ = 0, rs_stream_ = 0, ar_stream_ = 0;
  std::vector<std::uint32_t> fwd_end_, bwd_end_;
  std::vector<std::vector<std::uint32_t>> grads_done_;  // per unit: its last gradient collectives
};

}  // namespace

Plan FsdpStrategy::build(const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& knobs) const {
  Plan plan = new_plan("fsdp", trace, cluster);
  ShardedPlanBuilder(plan, trace, cluster, knobs, {plan.world_size, plan.world_size}).build();
  return plan;
}

int hsdp_shard_group(const ClusterSpec& cluster, const Knobs& knobs) {
  const int world = cluster.world_size();
  const int group = knobs.shard_group > 0 ? knobs.shard_group : cluster.devices_per_node;
  if (group < 1 || group > world || world % group != 0)
    throw InputError("", "", "--shard-group: " + std::to_string(group) + " ranks do not divide the " +
                                 std::to_string(world) + " ranks of the cluster");
  return group;
}

Plan HsdpStrategy::build(const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& knobs) const {
  Plan plan = new_plan("hsdp", trace, cluster);
  ShardedPlanBuilder(plan, trace, cluster, knobs, {plan.world_size, hsdp_shard_group(cluster, knobs)}).build();
  return plan;
}

}  // namespace redsim
