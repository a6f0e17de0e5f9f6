// NCCL_ALGO as each release applies it to collectives without the pinned algorithm, and as the
// NCCL emitter writes it (collectives/nccl_algo_pin.h). Release rules read from NVIDIA/nccl
// src/graph/tuning.cc: v2.18.6-1 "Never disable ring for non-allreduce operations"; v2.19.1-1 to
// v2.23.4-1 "at least set ring algo available" (ringbdw kept NCCL_PROTO's protocols from
// v2.22.3-1, NVIDIA/nccl issue 1304); v2.23.4-1 "If user has hard set NCCL_ALGO=COLLNET, ignore
// it" (ring and tree back when no ring, tree, NVLS or NVLSTree is left); v2.24.3-1 parseList
// per collective and no fallback.
//
// The cluster: 8 nodes of one A100 on 25 GB/s NICs (tests/test_nccl_pat.cpp's): under 2.26.2
// NCCL's model runs allgather on LL to 46.1 kB, PAT to 2.63 MB, then LL128 and Simple (worked
// there by hand), so a 1 MiB allgather is PAT's and a 1 GiB one Simple ring's (PAT and Simple ring
// cross at 5.09 MB in 2.23.4).
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <sstream>

#include "collectives/nccl_algo_pin.h"
#include "collectives/nccl_tuning.h"
#include "core/error.h"
#include "tests/test_support.h"

using namespace redsim;

namespace {

ClusterSpec one_gpu_nodes(int version) {
  auto c = testing::ideal_star(8, 25e9, 1e-6);
  c.library = CollectiveLibrary::nccl;
  c.device.compute_capability = 8.0;
  c.nccl_version = version;
  return c;
}

nccl::Choice choose(const ClusterSpec& c, OpKind kind, std::int64_t bytes, CollectiveRequest req = {}) {
  return nccl::Tuning(c).choose(kind, bytes, DType::fp32, ReduceOp::sum, req);
}

const CollectiveRequest kTree{Algorithm::tree, std::nullopt, 0};
const CollectiveRequest kPat{Algorithm::pat, std::nullopt, 0};

// NCCL_ALGO's grammar as tuning.cc's comment above parseList states it (2.24+): entries split by
// ';', each "function:list" (the first may omit "function:", meaning every function), lists
// split by ',', '^' excluding; a later entry replaces its functions' lists. Returns the enabled
// algorithms per function, lower case.
std::map<std::string, std::set<std::string>> parse_nccl_algo(const std::string& value) {
  const std::vector<std::string> funcs{"broadcast", "reduce", "allgather", "reducescatter", "allreduce"};
  const std::vector<std::string> algos{"tree", "ring", "collnetdirect", "collnetchain", "nvls", "nvlstree", "pat"};
  std::map<std::string, std::set<std::string>> enabled;
  for (const auto& f : funcs) enabled[f] = {algos.begin(), algos.end()};
  std::istringstream entries(value);
  std::string entry;
  bool first = true;
  while (std::getline(entries, entry, ';')) {
    const auto colon = entry.find(':');
    REQUIRE((colon != std::string::npos || first));
    std::string prefix = colon == std::string::npos ? "" : entry.substr(0, colon);
    std::string list = colon == std::string::npos ? entry : entry.substr(colon + 1);
    for (auto& ch : prefix) ch = static_cast<char>(std::tolower(ch));
    for (auto& ch : list) ch = static_cast<char>(std::tolower(ch));
    const bool exclude = !list.empty() && list[0] == '^';
    if (exclude) list.erase(0, 1);
    std::set<std::string> named;
    std::istringstream items(list);
    for (std::string a; std::getline(items, a, ',');) {
      REQUIRE(std::find(algos.begin(), algos.end(), a) != algos.end());
      named.insert(a);
    }
    bool matched = false;
    for (const auto& f : funcs) {
      if (!prefix.empty() && prefix != f) continue;
      matched = true;
      enabled[f].clear();
      for (const auto& a : algos)
        if (named.count(a) != exclude) enabled[f].insert(a);
    }
    REQUIRE(matched);
    first = false;
  }
  return enabled;
}

}  // namespace

TEST_CASE("NCCL_ALGO=Tree: collectives without a tree run rings to 2.23, NCCL's choice from 2.24",
          "[collectives][nccl][pin]") {
  for (int v : {21805, 21905, 22203, 22304}) {
    CAPTURE(v);
    CHECK(choose(one_gpu_nodes(v), OpKind::allgather, 1 << 20, kTree).algorithm == Algorithm::ring);
    CHECK(choose(one_gpu_nodes(v), OpKind::allreduce, 1 << 20, kTree).algorithm == Algorithm::tree);
  }
  // 2.24+ writes allreduce:Tree, so allgather keeps NCCL's own choice: PAT at 1 MiB.
  const auto c = one_gpu_nodes(22602);
  CHECK(choose(c, OpKind::allgather, 1 << 20).algorithm == Algorithm::pat);
  CHECK(choose(c, OpKind::allgather, 1 << 20, kTree).algorithm == Algorithm::pat);
  CHECK(choose(c, OpKind::broadcast, 1 << 20, kTree).algorithm == Algorithm::ring);
  CHECK(choose(c, OpKind::allreduce, 1 << 20, kTree).algorithm == Algorithm::tree);
}

TEST_CASE("NCCL_PROTO beside a tree pin: a broadcast's restored rings ignore it in 2.19-2.21 only",
          "[collectives][nccl][pin]") {
  // LL's base and network-hop latencies are below Simple's in every release's tables (tuning.cc
  // baseLat, hwLat), and at 1 KiB every protocol's bandwidth term is under a microsecond: a
  // broadcast free to choose runs LL.
  const CollectiveRequest tree_simple{Algorithm::tree, Protocol::simple, 0};
  CHECK(choose(one_gpu_nodes(21805), OpKind::broadcast, 1024, tree_simple).protocol == Protocol::simple);
  CHECK(choose(one_gpu_nodes(21905), OpKind::broadcast, 1024, tree_simple).protocol == Protocol::ll);
  CHECK(choose(one_gpu_nodes(22105), OpKind::broadcast, 1024, tree_simple).protocol == Protocol::ll);
  CHECK(choose(one_gpu_nodes(22203), OpKind::broadcast, 1024, tree_simple).protocol == Protocol::simple);
  CHECK(choose(one_gpu_nodes(22602), OpKind::broadcast, 1024, tree_simple).protocol == Protocol::simple);
  // The allreduce keeps both pins in every release.
  const auto ar = choose(one_gpu_nodes(21905), OpKind::allreduce, 1024, tree_simple);
  CHECK((ar.algorithm == Algorithm::tree && ar.protocol == Protocol::simple));
}

TEST_CASE("NCCL_ALGO=PAT: unknown before 2.23, ring and tree back in 2.23, allgather and reduce-scatter only from 2.24",
          "[collectives][nccl][pin][pat]") {
  CHECK(testing::error_of([] { choose(one_gpu_nodes(22203), OpKind::allreduce, 1 << 20, kPat); })
            .find("NCCL 2.22.3 has no PAT (from 2.23)") != std::string::npos);
  CHECK(testing::error_of([] { choose(one_gpu_nodes(22203), OpKind::allgather, 1 << 20, kPat); })
            .find("has no PAT") != std::string::npos);
  // 2.23: PAT leaves no ring, tree, NVLS or NVLSTree, so ring and tree come back: the allgather
  // chooses between PAT and rings (a 1 GiB one is Simple ring's), the allreduce between ring and tree.
  const auto v23 = one_gpu_nodes(22304);
  CHECK(choose(v23, OpKind::allgather, 1 << 30, kPat).algorithm == Algorithm::ring);
  CHECK(choose(v23, OpKind::allgather, 1 << 20, kPat).algorithm == Algorithm::pat);
  for (std::int64_t bytes : {std::int64_t{1024}, std::int64_t{1} << 30})
    CHECK(choose(v23, OpKind::allreduce, bytes, kPat).algorithm == choose(v23, OpKind::allreduce, bytes).algorithm);
  // On nodes of 8 GPUs PAT cannot run: 2.23's allgather runs rings, 2.24's call fails.
  auto dgx = testing::nccl_nodes(2);
  dgx.nccl_version = 22304;
  CHECK(choose(dgx, OpKind::allgather, 1 << 20, kPat).algorithm == Algorithm::ring);
  dgx.nccl_version = 22403;
  CHECK_THROWS_AS(choose(dgx, OpKind::allgather, 1 << 20, kPat), InputError);
  // 2.24+: allgather:PAT;reducescatter:PAT, so PAT at 1 GiB and the allreduce NCCL's own.
  const auto v26 = one_gpu_nodes(22602);
  CHECK(choose(v26, OpKind::reduce_scatter, 1 << 30, kPat).algorithm == Algorithm::pat);
  CHECK(choose(v26, OpKind::allreduce, 1 << 30, kPat).algorithm == choose(v26, OpKind::allreduce, 1 << 30).algorithm);
}

TEST_CASE("NCCL_ALGO's value per release enables what the simulation pinned", "[collectives][nccl][pin]") {
  CHECK(nccl::nccl_algo_value(Algorithm::tree, 21805) == "Tree");
  CHECK(nccl::nccl_algo_value(Algorithm::nvls, 22304) == "NVLS");
  CHECK(nccl::nccl_algo_value(Algorithm::ring, 22907) == "Ring");
  const auto tree = parse_nccl_algo(nccl::nccl_algo_value(Algorithm::tree, 22403));
  CHECK(tree.at("allreduce") == std::set<std::string>{"tree"});
  CHECK(tree.at("broadcast").size() == 7);
  CHECK(tree.at("allgather").count("pat") == 1);
  const auto pat = parse_nccl_algo(nccl::nccl_algo_value(Algorithm::pat, 22907));
  CHECK(pat.at("allgather") == std::set<std::string>{"pat"});
  CHECK(pat.at("reducescatter") == std::set<std::string>{"pat"});
  CHECK(pat.at("allreduce").size() == 7);
  CHECK(pat.at("reduce").size() == 7);
  // The reference parser follows tuning.cc's own examples.
  const auto ex = parse_nccl_algo("ring,collnetdirect;allreduce:tree,collnetdirect;broadcast:ring");
  CHECK(ex.at("allreduce") == std::set<std::string>{"tree", "collnetdirect"});
  CHECK(ex.at("broadcast") == std::set<std::string>{"ring"});
  CHECK(ex.at("reduce") == std::set<std::string>{"ring", "collnetdirect"});
  CHECK(parse_nccl_algo("^nvls").at("allreduce").count("nvls") == 0);
}
