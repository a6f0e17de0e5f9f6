#include "collectives/nccl_algo_pin.h"

#include "collectives/nccl_releases.h"
#include "core/cluster_json.h"

#include <tuple>
#include <utility>

namespace redsim::nccl {

namespace {
// First releases of each rule (ClusterSpec::nccl_version's encoding): the tags of NVIDIA/nccl
// where tuning.cc changed.
constexpr int kRingRestoredFrom = 21901;       // v2.19.1-1
constexpr int kRestoreKeepsProtoFrom = 22203;  // v2.22.3-1
constexpr int kPerCollectiveFrom = 22403;      // v2.24.3-1
}  // namespace

bool has_algorithm(OpKind kind, Algorithm a) {
  switch (kind) {
    case OpKind::allreduce: return a != Algorithm::pat && a != Algorithm::binomial;
    case OpKind::allgather:
    case OpKind::reduce_scatter: return a == Algorithm::ring || a == Algorithm::pat;
    default: return a == Algorithm::ring;
  }
}

PinFallback pin_fallback(int nccl_version) {
  if (nccl_version >= kPerCollectiveFrom) return PinFallback::per_collective;
  if (nccl_version >= kRestoreKeepsProtoFrom) return PinFallback::ring_restored;
  if (nccl_version >= kRingRestoredFrom) return PinFallback::ring_restored_any_protocol;
  return PinFallback::ring_kept;
}

int nccl_function(OpKind kind) {
  switch (kind) {
    case OpKind::broadcast: return 0;
    case OpKind::reduce: return 1;
    case OpKind::allgather: return 2;
    case OpKind::reduce_scatter: return 3;
    default: return 4;
  }
}

namespace {

std::uint32_t protocols_of(OpKind kind, const CollectiveRequest& req) {
  if (req.protocol) return proto_bit(*req.protocol);
  if (req.protocol_list) return req.protocol_list->enabled[static_cast<std::size_t>(nccl_function(kind))];
  return kAnyProtocol;
}

// A single name: the algorithms it leaves, and whether NCCL_PROTO still applies.
std::pair<std::uint32_t, bool> single_pin(OpKind kind, Algorithm pinned, int nccl_version) {
  const bool has = has_algorithm(kind, pinned);
  const PinFallback f = pin_fallback(nccl_version);
  if (f == PinFallback::per_collective) return {has ? algo_bit(pinned) : kAnyAlgorithm, true};
  // PAT (the only pin redsim runs that names none of ring, tree, NVLS and NVLSTree) brings ring
  // and tree back in 2.23.
  if (pinned == Algorithm::pat)
    return {algo_bit(Algorithm::ring) | algo_bit(Algorithm::tree) | (has ? algo_bit(Algorithm::pat) : 0u), true};
  if (has || kind == OpKind::allreduce) return {algo_bit(pinned), true};
  return {algo_bit(Algorithm::ring), f != PinFallback::ring_restored_any_protocol};
}

// The algorithms a release turns off before its CollNet rule looks at what a list left (2.17.1
// to 2.23.4 tuning.cc): names its parseList does not know, NVLS without NVLink SHARP (2.17),
// NVLSTree on one node and NVLS across nodes without CollNet (from 2.18).
std::uint32_t disabled_first(int nccl_version, const PinSite& site) {
  const Release& r = release_of(nccl_version);
  std::uint32_t off = 0;
  if (!r.has_nvls || (!r.has_nvls_tree && !site.nvls) || (r.has_nvls_tree && site.nodes > 1))
    off |= algo_bit(Algorithm::nvls);
  if (!r.has_nvls_tree || site.nodes == 1) off |= algo_bit(Algorithm::nvls_tree);
  if (r.pat_bus_share <= 0) off |= algo_bit(Algorithm::pat);
  return off;
}

constexpr std::uint32_t kRingTree = algo_bit(Algorithm::ring) | algo_bit(Algorithm::tree);

// "If user has hard set NCCL_ALGO=COLLNET, ignore it" (to 2.23, without CollNet): whether the
// list keeps none of what the check asks for, 2.17 ring or tree, 2.18 on any of ring, tree, NVLS
// and NVLSTree.
bool collnet_rule_ignores(std::uint32_t m, int nccl_version, const PinSite& site) {
  if (pin_fallback(nccl_version) == PinFallback::per_collective) return false;
  const std::uint32_t kept =
      release_of(nccl_version).has_nvls_tree ? kRingTree | algo_bit(Algorithm::nvls) | algo_bit(Algorithm::nvls_tree) : kRingTree;
  return !(m & kept & ~disabled_first(nccl_version, site));
}

// A list as NCCL reads it (core/nccl_list.h), then the release's rules.
std::uint32_t list_pin(OpKind kind, const NcclList& list, int nccl_version, const PinSite& site) {
  std::uint32_t m = list.enabled[static_cast<std::size_t>(nccl_function(kind))];
  const PinFallback f = pin_fallback(nccl_version);
  if (collnet_rule_ignores(m, nccl_version, site)) m |= kRingTree;
  // "Never disable ring for non-allreduce operations" (to 2.18).
  if (f == PinFallback::ring_kept && kind != OpKind::allreduce) m |= algo_bit(Algorithm::ring);
  return m;
}

}  // namespace

AlgoPin pin_for(OpKind kind, const CollectiveRequest& req, int nccl_version, const PinSite& site) {
  AlgoPin pin;
  bool keeps_protocols = true;
  if (req.algorithm) std::tie(pin.algorithms, keeps_protocols) = single_pin(kind, *req.algorithm, nccl_version);
  else if (req.algorithm_list) pin.algorithms = list_pin(kind, *req.algorithm_list, nccl_version, site);
  if (keeps_protocols) pin.protocols = protocols_of(kind, req);
  return pin;
}

std::optional<AlgoPin> ring_fallback(OpKind kind, const CollectiveRequest& req, int nccl_version) {
  const PinFallback f = pin_fallback(nccl_version);
  // 2.19-2.23 restore rings to any collective left nothing ("at least set ring algo
  // available"), allreduce included; a single allreduce name is refused instead (header).
  const bool allreduce_kept = kind == OpKind::allreduce && (f == PinFallback::ring_kept || !req.algorithm_list);
  if (allreduce_kept || f == PinFallback::per_collective) return std::nullopt;
  return AlgoPin{algo_bit(Algorithm::ring),
                 f == PinFallback::ring_restored_any_protocol ? kAnyProtocol : protocols_of(kind, req)};
}

std::string ignored_list_reason(const CollectiveRequest& req, int nccl_version, const PinSite& site) {
  if (!req.algorithm_list || req.algorithm_list->per_function) return "";
  const std::uint32_t m = req.algorithm_list->enabled[static_cast<std::size_t>(nccl_function(OpKind::allreduce))];
  if (!collnet_rule_ignores(m, nccl_version, site)) return "";
  return "NCCL " + nccl_version_name(nccl_version) + " ignores NCCL_ALGO=" + nccl_list_value(*req.algorithm_list) +
         " here (every algorithm it names is off or unknown on these nodes; NCCL warns \"ignoring NCCL_ALGO=COLLNET\"): "
         "ring and tree, NCCL's own choice";
}

std::string list_unsupported_reason(const CollectiveRequest& req, int nccl_version) {
  for (const auto* list : {&req.algorithm_list, &req.protocol_list}) {
    if (!*list || !(*list)->per_function || pin_fallback(nccl_version) == PinFallback::per_collective) continue;
    return "NCCL_" + std::string((*list)->of == NcclListOf::protocols ? "PROTO" : "ALGO") + "=" +
           nccl_list_value(**list) + " names collectives, which NCCL reads from 2.24 (earlier releases take one list for all)";
  }
  return "";
}

std::string requested_pins(const CollectiveRequest& req) {
  std::string out;
  if (req.algorithm) out = algorithm_name(*req.algorithm);
  if (req.algorithm_list) out = "NCCL_ALGO=" + nccl_list_value(*req.algorithm_list);
  if (req.protocol) out += (out.empty() ? "" : " with ") + std::string(protocol_name(*req.protocol));
  if (req.protocol_list) out += (out.empty() ? "" : " ") + ("NCCL_PROTO=" + nccl_list_value(*req.protocol_list));
  return out;
}

std::string nccl_algo_value(Algorithm pinned, int nccl_version) {
  const std::string name(nccl_algorithm_name(pinned));
  // Ring is every collective's: one name pins it everywhere in every release.
  if (pin_fallback(nccl_version) != PinFallback::per_collective || pinned == Algorithm::ring) return name;
  if (pinned == Algorithm::pat) return "allgather:" + name + ";reducescatter:" + name;
  return "allreduce:" + name;
}

}  // namespace redsim::nccl
