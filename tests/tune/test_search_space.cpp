// The grid redsim tune searches: which settings it holds, in what order, and what it leaves out.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "core/error.h"
#include "core/units.h"
#include "strategies/strategy.h"
#include "tests/test_support.h"
#include "tune/search_space.h"

using namespace redsim;
using namespace redsim::tune;

TEST_CASE("the standard axes are those of issue 6", "[tune][space]") {
  TuneConstraints c;
  c.max_localsgd_period = 6;
  auto a = standard_axes(c);
  REQUIRE(a.bucket_bytes.size() == 11);
  CHECK(a.bucket_bytes.front() == kMiB);
  CHECK(a.bucket_bytes.back() == kGiB);
  for (std::size_t i = 1; i < a.bucket_bytes.size(); ++i) CHECK(a.bucket_bytes[i] == 2 * a.bucket_bytes[i - 1]);
  CHECK(a.channels == std::vector<int>{1, 2, 4, 8, 16});
  CHECK(a.algorithms.size() == 3);
  CHECK(a.localsgd_periods == std::vector<int>{1, 2, 4, 6});
  CHECK(a.wire_dtypes.size() == 1);
  c.allow_compression = true;
  CHECK(standard_axes(c).wire_dtypes.size() == 3);
}

TEST_CASE("the grid enumerates every combination once, in lines along the bucket size", "[tune][space]") {
  const auto cluster = testing::ideal_multi_node(2, 2, 1e10, 1e-6, 1e9, 1e-5);
  TuneConstraints c;
  c.microbatches = 2;
  c.max_localsgd_period = 4;
  auto a = standard_axes(c);
  a.channels = {1, 2};
  auto g = build_grid(a, c, cluster);

  // Counted from the axes, independently of the enumeration.
  const std::size_t nb = a.bucket_bytes.size(), nch = 2, nalg = 3, nord = 2, nh = 3 /* 1, 2, 4 */;
  std::size_t ddp_line_points = 0;  // bucket sizes >= each first-bucket size (first <= bucket)
  for (auto f : a.first_bucket_bytes)
    for (auto b : a.bucket_bytes) ddp_line_points += (f <= b) ? 1 : 0;
  std::map<std::string, std::size_t> expected{
      {"flat", nalg * nch},
      {"bucketed", nalg * nch * nord * ddp_line_points},
      {"accumulate", nalg * nch * nord * ddp_line_points},
      {"zero", nch * 2 /* stages */ * 4 /* allgather */ * nb},
      {"localsgd", nalg * nch * nh * nb}};
  std::map<std::string, std::size_t> got;
  for (const auto& p : g.points) ++got[p.family];
  CHECK(got == expected);

  // Every point is distinct, and every point plans.
  std::set<std::string> seen;
  for (const auto& p : g.points) {
    CHECK(seen.insert(p.family + describe_knobs(p) + std::to_string(p.knobs.microbatches) +
                      std::to_string(p.knobs.localsgd_period))
              .second);
  }
  // Lines: same knobs but the bucket size, ascending.
  std::size_t total = 0;
  for (const auto& line : g.lines) {
    total += line.size();
    for (std::size_t i = 0; i < line.size(); ++i) {
      const auto& k = g.points[line[i]].knobs;
      const auto& k0 = g.points[line[0]].knobs;
      CHECK(g.points[line[i]].family == g.points[line[0]].family);
      CHECK(k.channels == k0.channels);
      CHECK(k.algorithm == k0.algorithm);
      CHECK(k.first_bucket_cap_bytes == k0.first_bucket_cap_bytes);
      CHECK(k.zero_stage == k0.zero_stage);
      CHECK(k.allgather_bucket_bytes == k0.allgather_bucket_bytes);
      CHECK(k.localsgd_period == k0.localsgd_period);
      if (i > 0) CHECK(k.bucket_cap_bytes > g.points[line[i - 1]].knobs.bucket_cap_bytes);
    }
  }
  CHECK(total == g.points.size());

  // With M = 2, "bucketed" is DDP over 2 micro-batches syncing each one.
  for (const auto& p : g.points) {
    if (p.family == "bucketed") {
      CHECK(p.knobs.strategy == "accumulate");
      CHECK(p.knobs.sync_every_microbatch);
      CHECK(p.knobs.microbatches == 2);
    }
    if (p.family == "accumulate") CHECK_FALSE(p.knobs.sync_every_microbatch);
    // ZeRO's collectives are not allreduces: NCCL_ALGO does not apply, so the knob stays unset.
    if (p.family == "zero") CHECK_FALSE(p.knobs.algorithm.has_value());
  }
}

TEST_CASE("the grid leaves out what cannot apply, and says why", "[tune][space]") {
  TuneConstraints c;  // M = 1
  auto a = standard_axes(c);
  auto single = testing::ideal_star(4, 1e9, 1e-5);
  auto g = build_grid(a, c, single);
  for (const auto& p : g.points) {
    CHECK(p.family != "accumulate");
    CHECK(p.knobs.algorithm != Algorithm::hierarchical);
    if (p.family == "bucketed") CHECK(p.knobs.strategy == "bucketed");
  }
  bool accumulate_note = false, hierarchical_note = false;
  for (const auto& n : g.notes) {
    accumulate_note = accumulate_note || n.rfind("accumulate:", 0) == 0;
    hierarchical_note = hierarchical_note || n.rfind("hierarchical", 0) == 0;
  }
  CHECK(accumulate_note);
  CHECK(hierarchical_note);
}

TEST_CASE("the grid's settings are valid knobs for their strategies", "[tune][space]") {
  const auto trace = testing::uniform_trace(4, 1 << 16, 1e-4, 2e-4, 1e-4);
  const auto cluster = testing::ideal_multi_node(2, 2, 1e10, 1e-6, 1e9, 1e-5);
  TuneConstraints c;
  c.microbatches = 3;
  c.max_localsgd_period = 2;
  c.allow_compression = true;
  auto g = build_grid(standard_axes(c), c, cluster);
  for (std::size_t i = 0; i < g.points.size(); i += 37) {
    const auto& p = g.points[i];
    auto plan = make_strategy(p.knobs.strategy)->plan(trace, cluster, p.knobs);
    CHECK(plan.world_size == 4);
  }
}

TEST_CASE("bad tune constraints are input errors", "[tune][space]") {
  const auto cluster = testing::ideal_star(4, 1e9, 1e-5);
  TuneConstraints c;
  c.strategies = {"bucketed", "nope"};
  CHECK_THROWS_AS(build_grid(standard_axes(c), c, cluster), InputError);
  c.strategies = {"accumulate"};  // with M = 1 there is nothing to search
  CHECK_THROWS_AS(build_grid(standard_axes(c), c, cluster), InputError);
  c.strategies = {};
  c.microbatches = 0;
  CHECK_THROWS_AS(build_grid(standard_axes(c), c, cluster), InputError);
  c.microbatches = 1;
  c.max_localsgd_period = 0;
  CHECK_THROWS_AS(build_grid(standard_axes(c), c, cluster), InputError);
  c.max_localsgd_period = 1;
  auto a = standard_axes(c);
  a.bucket_bytes = {4 * kMiB, 2 * kMiB};
  CHECK_THROWS_AS(build_grid(a, c, cluster), InputError);
  c.memory_per_device_GB = -1;
  CHECK_THROWS_AS(memory_limit_bytes(c, cluster), InputError);
}

TEST_CASE("sizes print in the units the frameworks use", "[tune][space]") {
  CHECK(format_bytes_binary(25 * kMiB) == "25 MiB");
  CHECK(format_bytes_binary(kGiB) == "1 GiB");
  CHECK(format_bytes_binary(512 * kKiB) == "512 KiB");
  CHECK(format_GiB(80'000'000'000LL) == "74.51 GiB");  // 80e9 / 2^30 = 74.5058
  CHECK(format_GiB(52'428'800) == "50.00 MiB");  // 50 x 2^20
}

TEST_CASE("hsdp is searched over the shard-group sizes that divide the world", "[tune][space][hsdp]") {
  // 4 nodes x 2 devices: 8 ranks. Groups of the node (2) and twice it (4) split the world into
  // 4 and 2 replicas; 8 would be fsdp, so the default axis holds exactly {2, 4}.
  const auto cluster = testing::ideal_multi_node(4, 2, 1e10, 1e-6, 1e9, 1e-5);
  TuneConstraints c;
  c.strategies = {"hsdp"};
  auto a = standard_axes(c);
  a.channels = {1};
  CHECK(hsdp_group_sizes(a, cluster) == std::vector<int>{2, 4});
  const auto g = build_grid(a, c, cluster);
  // Per group: every FSDP setting (wrap x reshard x prefetch), one channel count.
  const std::size_t per_group = a.fsdp_wrap_elems.size() * a.reshard_after_forward.size() * a.backward_prefetches.size();
  std::map<int, std::size_t> per_size;
  for (const auto& p : g.points) {
    CHECK(p.family == "hsdp");
    CHECK(p.knobs.strategy == "hsdp");
    ++per_size[p.knobs.shard_group];
  }
  CHECK(per_size == std::map<int, std::size_t>{{2, per_group}, {4, per_group}});
  CHECK(g.lines.size() == g.points.size());  // no bucket axis: a line per setting

  // Each point's plan shards within its group: the allgathers and reduce-scatters run in groups
  // of shard_group ranks, the replicas' allreduce in groups of world / shard_group.
  const auto trace = testing::uniform_trace(4, 1 << 16, 1e-4, 2e-4, 1e-4);
  for (const auto& p : g.points) {
    const auto plan = make_strategy(p.knobs.strategy)->plan(trace, cluster, p.knobs);
    bool saw_allreduce = false;
    for (const auto& op : plan.ops) {
      if (op.kind == OpKind::allgather || op.kind == OpKind::reduce_scatter) CHECK(op.group_size == p.knobs.shard_group);
      if (op.kind == OpKind::allreduce) {
        saw_allreduce = true;
        CHECK(op.group_size == 8 / p.knobs.shard_group);
      }
    }
    CHECK(saw_allreduce);
  }

  // An explicit axis keeps only sizes that divide the world into several groups of 2 or more
  // (0 = the node's 2 devices; 3 does not divide 8; 1 and 8 are DDP and fsdp).
  a.hsdp_shard_groups = {0, 3, 8, 1};
  CHECK(hsdp_group_sizes(a, cluster) == std::vector<int>{2});
  // On one node of 4 devices the default (the node and its multiples) is the whole world: hsdp is
  // left out with a note, and asking for it alone is an error; an explicit 2 still fits.
  const auto one_node = testing::ideal_multi_node(1, 4, 1e10, 1e-6, 1e9, 1e-5);
  a.hsdp_shard_groups = {};
  CHECK(hsdp_group_sizes(a, one_node).empty());
  CHECK_THROWS_AS(build_grid(a, c, one_node), InputError);
  c.strategies = {"fsdp", "hsdp"};
  const auto g1 = build_grid(a, c, one_node);
  bool note = false;
  for (const auto& n : g1.notes) note = note || n.rfind("hsdp: not searched", 0) == 0;
  CHECK(note);
  for (const auto& p : g1.points) CHECK(p.family == "fsdp");
  a.hsdp_shard_groups = {2};
  CHECK(hsdp_group_sizes(a, one_node) == std::vector<int>{2});
}

TEST_CASE("fsdp and hsdp search NCCL_ALGO auto, Ring and PAT where NCCL runs PAT", "[tune][space][pat]") {
  // PAT needs one GPU a node and NCCL 2.23+ (src/graph/tuning.cc ncclPatEnable): 8 single-GPU
  // nodes under 2.26.2 get the three values, nodes of 8 GPUs or 2.18.5 only auto.
  auto one_gpu = testing::ideal_star(8, 25e9, 1e-6);
  one_gpu.library = CollectiveLibrary::nccl;
  one_gpu.device.compute_capability = 8.0;
  one_gpu.nccl_version = 22602;
  TuneConstraints c;
  c.strategies = {"fsdp", "hsdp"};
  const auto algorithms_of = [&](const ClusterSpec& cluster, const SearchAxes& a) {
    std::set<std::string> seen;
    for (const auto& p : build_grid(a, c, cluster).points) seen.insert(algorithm_label(p.knobs));
    return seen;
  };
  const auto a = standard_axes(c);
  CHECK(algorithms_of(one_gpu, a) == std::set<std::string>{"auto", "ring", "pat"});
  auto no_text = a;
  no_text.sharded_nccl_algo = false;  // deepspeed_config.json cannot carry NCCL_ALGO
  CHECK(algorithms_of(one_gpu, no_text) == std::set<std::string>{"auto"});
  auto old = one_gpu;
  old.nccl_version = 21805;
  CHECK(algorithms_of(old, a) == std::set<std::string>{"auto"});
  auto dgx = testing::nccl_nodes(2);
  dgx.nccl_version = 22602;
  c.strategies = {"fsdp"};
  CHECK(algorithms_of(dgx, a) == std::set<std::string>{"auto"});
}
