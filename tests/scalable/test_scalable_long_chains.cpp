// Chains past SimOptions::chain_rank_ends_max_ranks at scalable fidelity: ZeRO's reduce per owner
// keeps a record per op and the ranks whose bytes differ, not one per rank, and equal chains are
// simulated once. The reference is the same plan simulated with each rank's own end.
#include <catch2/catch.hpp>

#include <algorithm>

#include "core/knobs.h"
#include "core/step_summary.h"
#include "sim/sim_engine.h"
#include "strategies/strategy.h"
#include "tests/test_support.h"

using namespace redsim;

namespace {

bool is_chain(const PlanOp& op) { return op.kind == OpKind::reduce || op.kind == OpKind::broadcast; }

Plan zero_plan(const ClusterSpec& cluster) {
  // 12 layers of 3 M fp32 elements on 64 ranks: 8 MiB buckets split into about 20 owners each,
  // so most owners' reduces are equal in size and a few are cut by a bucket boundary.
  const auto trace = testing::uniform_trace(12, 3'000'000, 2e-3, 4e-3, 1e-3);
  Knobs k;
  k.strategy = "zero";
  k.bucket_cap_bytes = 8 * kMiB;
  return make_strategy("zero")->plan(trace, cluster, k);
}

}  // namespace

TEST_CASE("a long chain ends on every rank when its last rank ends: bytes, step and summary as per rank",
          "[scalable][chain]") {
  auto cluster = testing::preset_fabric("dgx-h100-x2");
  cluster.nodes = 8;  // 64 ranks, folded onto a node
  const Plan plan = zero_plan(cluster);
  int chains = 0;
  for (const auto& op : plan.ops) chains += is_chain(op) ? 1 : 0;
  REQUIRE(chains > 64);  // a reduce per owner per bucket

  SimOptions per_rank;
  per_rank.fidelity = Fidelity::scalable;
  SimOptions folded = per_rank;
  folded.chain_rank_ends_max_ranks = 2;  // 64 ranks count as a long chain's world
  const Timeline a = simulate(plan, cluster, per_rank);
  const Timeline b = simulate(plan, cluster, folded);

  for (const auto& op : plan.ops) {
    double last_end = 0;
    for (int r = 0; r < plan.world_size; ++r) last_end = std::max(last_end, a.at(r, op.id).end_s);
    for (int r = 0; r < plan.world_size; ++r) {
      const auto &x = a.at(r, op.id), &y = b.at(r, op.id);
      CHECK(y.bytes_sent == x.bytes_sent);  // head sends only, tail receives only, as per rank
      CHECK(y.bytes_received == x.bytes_received);
      CHECK(y.start_s == Approx(x.start_s).epsilon(1e-12));
      // A chain's ranks all end with its last one; any other op as before.
      CHECK(y.end_s == Approx(is_chain(op) ? last_end : x.end_s).epsilon(1e-12));
    }
    if (is_chain(op)) CHECK(b.op_records(op.id).size() <= static_cast<std::size_t>(1 + 2 * op.channels));
  }
  const auto sa = summarize(plan, a), sb = summarize(plan, b);
  CHECK(sb.step_time_s == Approx(sa.step_time_s).epsilon(1e-12));
  CHECK(sb.bytes_sent_per_rank == sa.bytes_sent_per_rank);
  // A rank counted busy until its chain ends is never less busy.
  CHECK(sb.comm_time_s >= sa.comm_time_s * (1 - 1e-12));

  // What --max-ops counts: a record and each channel's head and tail per chain.
  std::int64_t expected = 0;
  for (const auto& op : plan.ops) expected += is_chain(op) ? 1 + 2 * op.channels : 0;
  CHECK(timeline_records(plan, Fidelity::scalable, 2) - expected ==
        timeline_records(plan, Fidelity::scalable) - chains * std::int64_t{plan.world_size});
}

TEST_CASE("equal long chains take equal time: the conservation of a reduce's bytes over the world",
          "[scalable][chain]") {
  auto cluster = testing::preset_fabric("dgx-h100-x2");
  cluster.nodes = 8;
  const auto plan = testing::single_collective_plan(64, OpKind::reduce, Algorithm::ring, 48 * kMiB, 4, 5);
  SimOptions o;
  o.fidelity = Fidelity::scalable;
  o.chain_rank_ends_max_ranks = 2;
  const Timeline tl = simulate(plan, cluster, o);
  std::int64_t sent = 0, received = 0;
  for (int r = 0; r < 64; ++r) sent += tl.at(r, 0).bytes_sent, received += tl.at(r, 0).bytes_received;
  // Every rank but the root sends each channel's share once; every rank but each chain's head
  // receives it: (N - 1) x the buffer both ways, in wire bytes.
  CHECK(sent == received);
  CHECK(tl.at(5, 0).bytes_sent == 0);  // the root
  CHECK(sent >= 63 * 48 * kMiB);
}
