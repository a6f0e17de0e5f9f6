// NCCL_ALGO / NCCL_PROTO values beyond one name (core/nccl_list.h) and what each release makes of
// them (collectives/nccl_algo_pin.h). The grammar and its three examples are those of the comment
// above parseList in NVIDIA/nccl v2.24.3-1 src/graph/tuning.cc; the release rules are quoted in
// tests/test_nccl_algo_pin.cpp's header.
#include <catch2/catch.hpp>

#include "collectives/nccl_algo_pin.h"
#include "collectives/nccl_tuning.h"
#include "core/cluster_json.h"
#include "core/collective_types.h"
#include "core/error.h"
#include "core/nccl_list.h"
#include "tests/test_support.h"

using namespace redsim;

namespace {

constexpr std::uint32_t bit(Algorithm a) { return 1u << static_cast<int>(a); }
constexpr std::uint32_t bit(Protocol p) { return 1u << static_cast<int>(p); }
constexpr std::size_t kBroadcast = 0, kReduce = 1, kAllGather = 2, kReduceScatter = 3, kAllReduce = 4;

NcclList parse(NcclListOf of, std::string_view value) {
  std::string error;
  const auto list = parse_nccl_list(of, value, &error);
  INFO(error);
  REQUIRE(list.has_value());
  return *list;
}

std::string parse_error(NcclListOf of, std::string_view value) {
  std::string error;
  CHECK_FALSE(parse_nccl_list(of, value, &error).has_value());
  return error;
}

CollectiveRequest with_algorithms(std::string_view value) {
  CollectiveRequest req;
  req.algorithm_list = parse(NcclListOf::algorithms, value);
  return req;
}

ClusterSpec one_gpu_nodes(int version) {  // tests/test_nccl_algo_pin.cpp's: 8 nodes of one A100
  auto c = testing::ideal_star(8, 25e9, 1e-6);
  c.library = CollectiveLibrary::nccl;
  c.device.compute_capability = 8.0;
  c.nccl_version = version;
  return c;
}

nccl::Choice choose(const ClusterSpec& c, OpKind kind, std::int64_t bytes, const CollectiveRequest& req) {
  return nccl::Tuning(c).choose(kind, bytes, DType::fp32, ReduceOp::sum, req);
}

}  // namespace

TEST_CASE("NCCL lists: tuning.cc's three examples parse as its comment says", "[nccl][list]") {
  // "Enable ring and collnetdirect for all functions, then select tree and collnetdirect for
  // allreduce and ring for broadcast."
  const auto algo = parse(NcclListOf::algorithms, "ring,collnetdirect;allreduce:tree,collnetdirect;broadcast:ring");
  const std::uint32_t ring_cd = bit(Algorithm::ring) | bit(Algorithm::collnet_direct);
  CHECK(algo.enabled[kAllReduce] == (bit(Algorithm::tree) | bit(Algorithm::collnet_direct)));
  CHECK(algo.enabled[kBroadcast] == bit(Algorithm::ring));
  CHECK(algo.enabled[kReduce] == ring_cd);
  CHECK(algo.enabled[kAllGather] == ring_cd);
  CHECK(algo.enabled[kReduceScatter] == ring_cd);
  CHECK(algo.per_function);
  // "Enable LL and Simple for all functions, but everything except LL for allreduce."
  const auto proto = parse(NcclListOf::protocols, "LL,Simple;allreduce:^LL");
  CHECK(proto.enabled[kAllReduce] == (bit(Protocol::ll128) | bit(Protocol::simple)));
  CHECK(proto.enabled[kReduce] == (bit(Protocol::ll) | bit(Protocol::simple)));
  // "Enable everything but LL128, but only LL128 for allreduce."
  const auto only = parse(NcclListOf::protocols, "^LL128;allreduce:LL128");
  CHECK(only.enabled[kAllReduce] == bit(Protocol::ll128));
  CHECK(only.enabled[kAllGather] == (bit(Protocol::ll) | bit(Protocol::simple)));
}

TEST_CASE("NCCL lists: names and functions are case-insensitive, '^' excludes, empty tokens are skipped",
          "[nccl][list]") {
  CHECK(parse(NcclListOf::algorithms, "RING,tree") == parse(NcclListOf::algorithms, "Tree,Ring"));
  CHECK(parse(NcclListOf::algorithms, "ring,,tree;") == parse(NcclListOf::algorithms, "ring,tree"));
  const auto no_nvls = parse(NcclListOf::algorithms, "^NVLS");
  for (auto fn : no_nvls.enabled) CHECK(fn == (nccl_all_names(NcclListOf::algorithms) & ~bit(Algorithm::nvls)));
  CHECK_FALSE(no_nvls.per_function);
  // "^" alone unsets every name and then sets none back: everything stays enabled.
  CHECK(parse(NcclListOf::protocols, "^").enabled[kAllReduce] == nccl_all_names(NcclListOf::protocols));
  CHECK(parse(NcclListOf::algorithms, "ALLGATHER:pat").enabled[kAllGather] == bit(Algorithm::pat));
  // NCCL's name for CollNet direct and redsim's short one.
  CHECK(parse(NcclListOf::algorithms, "CollNetDirect") == parse(NcclListOf::algorithms, "collnet"));
}

TEST_CASE("NCCL lists: bad values name what was expected", "[nccl][list]") {
  CHECK(parse_error(NcclListOf::algorithms, "Ring,Trees").find("unknown name \"Trees\"") != std::string::npos);
  CHECK(parse_error(NcclListOf::protocols, "LL,Ring").find("LL, LL128, Simple") != std::string::npos);
  CHECK(parse_error(NcclListOf::algorithms, "allreduce:Tree;Ring").find("needs a \"function:\" prefix") !=
        std::string::npos);
  CHECK(parse_error(NcclListOf::algorithms, "allgatherv:Ring").find("unknown function \"allgatherv\"") !=
        std::string::npos);
  CHECK(parse_error(NcclListOf::algorithms, "allreduce:Tree:Ring").find("more than one ':'") != std::string::npos);
  CHECK(parse_error(NcclListOf::algorithms, "allreduce:").find("empty list") != std::string::npos);
  CHECK_FALSE(parse_error(NcclListOf::algorithms, ";").empty());
  // redsim's own two-level algorithm is not an NCCL_ALGO name.
  CHECK(parse_error(NcclListOf::algorithms, "ring,hierarchical").find("unknown name") != std::string::npos);
}

TEST_CASE("NCCL lists: written back in NCCL's spellings, shortest form, parse to the same list", "[nccl][list]") {
  CHECK(nccl_list_value(parse(NcclListOf::algorithms, "tree,ring")) == "Tree,Ring");
  // Six of seven kept: the exclusion is shorter.
  CHECK(nccl_list_value(parse(NcclListOf::algorithms, "^nvls")) == "^NVLS");
  CHECK(nccl_list_value(parse(NcclListOf::protocols, "ll,ll128")) == "^Simple");
  CHECK(nccl_list_value(parse(NcclListOf::algorithms, "^")) == "^");
  // Functions left with every name are left out, as NCCL leaves an unnamed function.
  CHECK(nccl_list_value(parse(NcclListOf::algorithms, "allgather:pat;reducescatter:pat")) ==
        "AllGather:PAT;ReduceScatter:PAT");
  for (auto value : {"ring,collnetdirect;allreduce:tree,collnetdirect;broadcast:ring", "^NVLS,NVLSTree",
                     "allgather:PAT;reducescatter:PAT", "Ring;allreduce:^Ring"}) {
    CAPTURE(value);
    const auto list = parse(NcclListOf::algorithms, value);
    const auto written = nccl_list_value(list);
    CAPTURE(written);
    CHECK(parse(NcclListOf::algorithms, written) == list);
    CHECK((written.find(';') != std::string::npos) == list.per_function);
  }
  // The list most functions keep comes first, unprefixed.
  CHECK(nccl_list_value(parse(NcclListOf::protocols,
                              "broadcast:^LL128;reduce:^LL128;allgather:^LL128;reducescatter:^LL128;allreduce:LL128")) == "^LL128;AllReduce:LL128");
}

TEST_CASE("NCCL lists: a setting is auto, one name or a list", "[nccl][list]") {
  std::optional<Algorithm> a;
  std::optional<NcclList> list;
  std::string error;
  CHECK(parse_algorithm_setting("auto", &a, &list, &error));
  CHECK((!a && !list));
  CHECK(parse_algorithm_setting("hierarchical", &a, &list, &error));
  CHECK((a == Algorithm::hierarchical && !list));
  CHECK(parse_algorithm_setting("^NVLS", &a, &list, &error));
  CHECK((!a && list && list->enabled[kAllReduce] == (nccl_all_names(NcclListOf::algorithms) & ~bit(Algorithm::nvls))));
  CHECK_FALSE(parse_algorithm_setting("rings", &a, &list, &error));
  CHECK(error.find("got \"rings\"") != std::string::npos);
  std::optional<Protocol> p;
  CHECK_FALSE(parse_protocol_setting("LL,LL256", &p, &list, &error));
  CHECK(error.find("unknown name \"LL256\"") != std::string::npos);
}

TEST_CASE("NCCL_ALGO lists per release: 2.24+ reads functions and has no fallback", "[nccl][list][pin]") {
  // A bare list applies to every function from 2.24: NCCL_ALGO=Tree leaves allgather nothing it
  // has, so the call fails, while the single name redsim writes as allreduce:Tree does not.
  const auto v26 = one_gpu_nodes(22602);
  CHECK_THROWS_AS(choose(v26, OpKind::allgather, 1 << 20, with_algorithms("Tree,NVLS")), InputError);
  CHECK(choose(v26, OpKind::allreduce, 1 << 20, with_algorithms("Tree,NVLS")).algorithm == Algorithm::tree);
  // Per function: allgather rings, allreduce trees.
  const auto split = with_algorithms("allgather:Ring;allreduce:Tree");
  CHECK(choose(v26, OpKind::allgather, 1 << 20, split).algorithm == Algorithm::ring);
  CHECK(choose(v26, OpKind::allreduce, 1 << 30, split).algorithm == Algorithm::tree);
  // An exclusion: at 1 MiB this allgather is PAT's (test_nccl_algo_pin.cpp's header); without PAT
  // the next is rings.
  CHECK(choose(v26, OpKind::allgather, 1 << 20, with_algorithms("^PAT")).algorithm == Algorithm::ring);
  // Per-function entries before 2.24 are refused: those releases take one list for every function.
  CHECK(testing::error_of([] { choose(one_gpu_nodes(22304), OpKind::allreduce, 1 << 20, with_algorithms("allreduce:Tree")); })
            .find("reads from 2.24") != std::string::npos);
}

TEST_CASE("NCCL_ALGO lists per release: to 2.23 CollNet alone is ignored, to 2.18 ring stays", "[nccl][list][pin]") {
  // A CollNet-only list leaves no ring, tree, NVLS or NVLSTree: ring and tree come back to 2.23,
  // so the choice is NCCL's own (redsim's clusters have no CollNet).
  for (int v : {21805, 22203, 22304}) {
    CAPTURE(v);
    const auto c = one_gpu_nodes(v);
    CHECK(choose(c, OpKind::allreduce, 1 << 30, with_algorithms("CollNetDirect,CollNetChain")).algorithm ==
          choose(c, OpKind::allreduce, 1 << 30, {}).algorithm);
  }
  // Before 2.23 NCCL skips the unknown name PAT: a list of PAT alone is a CollNet-only list there.
  const auto v22 = one_gpu_nodes(22203);
  CHECK(choose(v22, OpKind::allreduce, 1 << 30, with_algorithms("PAT")).algorithm ==
        choose(v22, OpKind::allreduce, 1 << 30, {}).algorithm);
  CHECK(choose(v22, OpKind::allgather, 1 << 20, with_algorithms("Ring,PAT")).algorithm == Algorithm::ring);
  // From 2.24 the same list leaves allreduce nothing.
  CHECK_THROWS_AS(choose(one_gpu_nodes(22403), OpKind::allreduce, 1 << 30, with_algorithms("CollNetDirect")),
                  InputError);
  // To 2.18 a list without ring keeps it outside allreduce: the allgather runs rings.
  CHECK(choose(one_gpu_nodes(21805), OpKind::allgather, 1 << 20, with_algorithms("Tree")).algorithm ==
        Algorithm::ring);
  // 2.19 to 2.23 restore rings for a collective the list leaves nothing.
  CHECK(choose(one_gpu_nodes(22203), OpKind::broadcast, 1 << 20, with_algorithms("Tree,NVLS")).algorithm ==
        Algorithm::ring);
}

TEST_CASE("NCCL_PROTO lists restrict the protocols NCCL's model ranks", "[nccl][list][pin]") {
  // At 1 KiB a free broadcast runs LL (test_nccl_algo_pin.cpp); without LL it runs something else,
  // and with LL only for broadcast it keeps LL while an allreduce honours its own entry.
  const auto c = one_gpu_nodes(22602);
  CollectiveRequest req;
  req.protocol_list = parse(NcclListOf::protocols, "^LL");
  CHECK(choose(c, OpKind::broadcast, 1024, req).protocol != Protocol::ll);
  req.protocol_list = parse(NcclListOf::protocols, "Simple;broadcast:LL");
  CHECK(choose(c, OpKind::broadcast, 1024, req).protocol == Protocol::ll);
  CHECK(choose(c, OpKind::allreduce, 1024, req).protocol == Protocol::simple);
}

TEST_CASE("NCCL_ALGO lists per release: what the release disables first counts as not left", "[nccl][list][pin]") {
  // tuning.cc 2.17.1-2.23.4 turns algorithms off before its CollNet rule reads what NCCL_ALGO
  // left: names parseList does not know, NVLS without NVLink SHARP (2.17), NVLSTree on one node
  // and NVLS across nodes (2.18 on). So Azure/AI-benchmarking-guide's NCCL_ALGO=NVLSTree on one
  // node runs NCCL's own choice there.
  const auto node = [](double cc, bool nvls, int version) {
    auto c = testing::nccl_node(cc, 20, nvls);
    c.nccl_version = version;
    return c;
  };
  const auto same_as = [](const ClusterSpec& c, const CollectiveRequest& a, const CollectiveRequest& b) {
    for (std::int64_t bytes : {std::int64_t{4096}, std::int64_t{1} << 20, std::int64_t{1} << 30}) {
      CAPTURE(c.nccl_version, bytes);
      const auto x = choose(c, OpKind::allreduce, bytes, a), y = choose(c, OpKind::allreduce, bytes, b);
      CHECK(x.algorithm == y.algorithm);
      CHECK(x.protocol == y.protocol);
    }
  };
  for (int v : {21805, 22105, 22304}) {
    same_as(node(9.0, true, v), with_algorithms("NVLSTree"), {});
    CollectiveRequest single;
    single.algorithm = Algorithm::nvls_tree;  // one name: refused rather than quietly NCCL's choice
    CHECK_THROWS_AS(choose(node(9.0, true, v), OpKind::allreduce, 1 << 20, single), InputError);
  }
  CHECK_THROWS_AS(choose(node(9.0, true, 22403), OpKind::allreduce, 1 << 20, with_algorithms("NVLSTree")), InputError);
  // Names a release does not know are skipped: NVLS before 2.17, NVLSTree before 2.18.
  same_as(node(8.0, false, 21212), with_algorithms("NVLS"), {});
  same_as(node(9.0, true, 21701), with_algorithms("NVLSTree"), with_algorithms("Ring,Tree"));
  // 2.17 turns NVLS off without NVLink SHARP and asks only for ring or tree: NVLS alone brings
  // them back beside NVLS, which is every algorithm of these nodes.
  same_as(node(8.0, false, 21701), with_algorithms("NVLS"), {});
  same_as(node(9.0, true, 21701), with_algorithms("NVLS"), {});
  // 2.18 keeps NVLS enabled on an A100 node, whose NVLS graph has no channels: "no
  // algorithm/protocol available". 2.19-2.23 then give the allreduce its rings, with every protocol.
  CHECK_THROWS_AS(choose(node(8.0, false, 21805), OpKind::allreduce, 1 << 20, with_algorithms("NVLS")), InputError);
  for (std::int64_t bytes : {std::int64_t{4096}, std::int64_t{1} << 30})
    CHECK(choose(node(8.0, false, 22105), OpKind::allreduce, bytes, with_algorithms("NVLS")).algorithm == Algorithm::ring);
  CollectiveRequest single;
  single.algorithm = Algorithm::nvls;
  CHECK_THROWS_AS(choose(node(8.0, false, 22105), OpKind::allreduce, 1 << 20, single), InputError);
  // Across nodes NVLS needs CollNet: to 2.23 a list of NVLS alone is ring and tree, from 2.24 nothing.
  auto two = load_cluster(REDSIM_SOURCE_DIR "/configs/dgx-h100-x2.json");
  for (int v : {21805, 22105}) {
    two.nccl_version = v;
    same_as(two, with_algorithms("NVLS"), with_algorithms("Ring,Tree"));
  }
  two.nccl_version = 22403;
  CHECK_THROWS_AS(choose(two, OpKind::allreduce, 1 << 20, with_algorithms("NVLS")), InputError);
}
