// The scalable fidelity's NVLS allreduce: each device of the folded period sends to its NVSwitch
// and receives from it at once, one flow each way carrying every loop of the pipeline (the
// exact fidelity's steps, collectives' nvls_* arithmetic).
#include <algorithm>

#include "sim/network.h"
#include "sim/scalable_model.h"
#include "sim/sim_context.h"

namespace redsim::scalable {

namespace {

struct NvlsTotals {
  std::int64_t up = 0, down = 0;  // payload a device sends and receives
  std::int64_t steps_max = 0;     // sum over pipeline steps of the busier direction
  int steps = 0;
};

NvlsTotals nvls_totals(const Mechanics& m, std::int64_t bytes, int heads, int head) {
  NvlsTotals t;
  const int loops = nvls_loops(m, bytes, heads);
  for (int k = 0; k <= loops; ++k) {
    std::int64_t up = 0, down = 0;
    if (k < loops) {
      const auto slice = nvls_slice(bytes, loops, k);
      up += slice;
      down += nvls_piece(slice, heads, head);
    }
    if (k > 0) {
      const auto slice = nvls_slice(bytes, loops, k - 1);
      up += nvls_piece(slice, heads, head);
      down += slice;
    }
    t.up += up;
    t.down += down;
    t.steps_max += std::max(up, down);
  }
  t.steps = loops + 1;
  return t;
}

}  // namespace

std::vector<Stage> Model::nvls_stages(const PlanOp& op, std::int64_t bytes) {
  const auto& m = mech(op);
  const int heads = cluster_.devices_per_node;
  Stage st;
  for (int r = 0; r < fold_.period_ranks; ++r) {
    const auto t = nvls_totals(m, bytes, heads, cluster_.local_of(r));
    const int sw = switch_endpoint(cluster_, cluster_.node_of(r));
    // Both directions carry the busier side of every step, so that the pipeline's fill and
    // drain (a step with a whole slice one way and a piece the other) last as in the steps.
    for (auto route : {routes_.between(r, sw, fold_), routes_.between(sw, r, fold_)}) {
      Flow f;
      f.route = route;
      f.bytes = t.steps_max;
      f.rounds = t.steps;
      f.post_delay_s = (t.steps - 1) * routes_.latency_s(route);
      apply_protocol(f, m, 1);
      st.flows.push_back(f);
    }
  }
  return {st};
}

void Model::add_nvls_rank_bytes(const PlanOp& op, std::int64_t bytes, std::vector<std::int64_t>& sent,
                                std::vector<std::int64_t>& received) {
  const auto& m = mech(op);
  for (int r = 0; r < plan_.world_size; ++r) {
    const auto t = nvls_totals(m, bytes, cluster_.devices_per_node, cluster_.local_of(r));
    sent[static_cast<std::size_t>(r)] += t.up;
    received[static_cast<std::size_t>(r)] += t.down;
  }
}

}  // namespace redsim::scalable
