// How a pinned algorithm (NCCL_ALGO) reaches each collective, release by release, and how the
// variable is written for that release. The owner of NCCL_ALGO's meaning: the collective model
// ranks what the pin leaves, the NCCL emitter writes the pin back in the release's syntax.
//
// NCCL_ALGO names algorithms for every collective, though broadcast and reduce have only rings,
// allgather and reduce-scatter rings and PAT (and NVLS and CollNet, which redsim does not model
// for them), and PAT is an allgather and reduce-scatter algorithm only. What a collective does
// when the pin names none of its algorithms changed (NVIDIA/nccl src/graph/tuning.cc):
// - to 2.18: ring is never disabled outside allreduce ("Never disable ring for non-allreduce
//   operations");
// - 2.19 to 2.23: a collective left with nothing gets its rings back ("at least set ring algo
//   available"), with every protocol to 2.21 (NCCL_PROTO ignored there, NVIDIA/nccl issue 1304)
//   and only NCCL_PROTO's from 2.22;
// - to 2.23, without CollNet, a pin that leaves none of ring, tree, NVLS and NVLSTree enabled
//   (2.17: neither ring nor tree) gets ring and tree back for every collective ("If user has
//   hard set NCCL_ALGO=COLLNET, ignore it"): NCCL_ALGO=PAT in 2.23 leaves allreduce NCCL's
//   choice of ring and tree, and allgather and reduce-scatter its choice of PAT and ring. What
//   the release disables first counts as not left: names it does not know (parseList skips
//   them: NVLS before 2.17, NVLSTree before 2.18, PAT before 2.23), NVLS without NVLink SHARP
//   (2.17), NVLSTree on one node and NVLS across nodes (2.18-2.23). So NCCL_ALGO=NVLSTree on one
//   node, as Azure/AI-benchmarking-guide runs it, is NCCL's own choice of ring and tree;
// - from 2.24: no fallback (the call fails with "No algorithm/protocol available"), but
//   NCCL_ALGO takes a list per collective ("allreduce:tree"), so redsim writes the pin for the
//   collectives that have the algorithm and leaves the others NCCL's own choice.
// redsim refuses (exit 2) a single allreduce name the hardware cannot run (NVLS without NVLink
// SHARP, NVLSTree on one node, CollNet), where NCCL would quietly run something else: the
// simulation asked for is not the one NCCL would run. A list (NCCL_ALGO's syntax, or a log's
// NCCL_ALGO) is taken as NCCL takes it, 2.19-2.23's rings for an allreduce left nothing included.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "core/collective_types.h"
#include "core/plan.h"

namespace redsim::nccl {

// Whether NCCL has algorithm `a` for collective `kind` among those redsim models.
bool has_algorithm(OpKind kind, Algorithm a);

enum class PinFallback {
  ring_kept,                   // to 2.18
  ring_restored_any_protocol,  // 2.19-2.21
  ring_restored,               // 2.22-2.23
  per_collective,              // 2.24 on
};
PinFallback pin_fallback(int nccl_version);

constexpr std::uint32_t algo_bit(Algorithm a) { return 1u << static_cast<int>(a); }
constexpr std::uint32_t proto_bit(Protocol p) { return 1u << static_cast<int>(p); }
constexpr std::uint32_t kAnyAlgorithm = ~0u;
constexpr std::uint32_t kAnyProtocol = ~0u;

// NCCL's function index (core/nccl_list.h's order) of a collective kind.
int nccl_function(OpKind kind);

// What the request's NCCL_ALGO and NCCL_PROTO leave collective `kind` under release
// `nccl_version` (redsim models no CollNet): the algorithms and protocols NCCL's model may rank.
// A single algorithm name pins it where the collective has it (above); a list
// (CollectiveRequest::algorithm_list) is taken as NCCL reads it, then the release's rules apply:
// to 2.23 the CollNet rule (ring and tree back when the list keeps none of ring, tree, NVLS and
// NVLSTree) and to 2.18 ring kept outside allreduce. The caller refuses what
// list_unsupported_reason names first.
struct AlgoPin {
  std::uint32_t algorithms = kAnyAlgorithm;
  std::uint32_t protocols = kAnyProtocol;
};
// Where a pin applies: what the release disables before it reads what NCCL_ALGO left (above).
struct PinSite {
  int nodes = 1;
  bool nvls = false;  // NVLink SHARP that NCCL can use on these devices
};
AlgoPin pin_for(OpKind kind, const CollectiveRequest& req, int nccl_version, const PinSite& site);
// Why NCCL sets the request's NCCL_ALGO list aside on these nodes ("" when it does not): to 2.23
// a list whose algorithms the release all turns off first or does not know is ignored, ring and
// tree coming back (NCCL warns "ignoring NCCL_ALGO=COLLNET"). Lists name every collective alike
// before 2.24, where this applies, so the reason is the same for each.
std::string ignored_list_reason(const CollectiveRequest& req, int nccl_version, const PinSite& site);
// What the release leaves a collective whose pinned algorithms cannot run: rings, with
// NCCL_PROTO's protocols or every protocol (to 2.23; allreduce from 2.19 and for a list only);
// nullopt otherwise.
std::optional<AlgoPin> ring_fallback(OpKind kind, const CollectiveRequest& req, int nccl_version);
// Why the release cannot read the request's lists as given ("" if it can): per-collective entries
// before 2.24. (A list naming PAT before 2.23 is the collective model's to refuse, as a PAT pin.)
std::string list_unsupported_reason(const CollectiveRequest& req, int nccl_version);
// The request's NCCL_ALGO / NCCL_PROTO as a user would set them, for messages: "Tree",
// "NCCL_ALGO=^NVLS", "NCCL_PROTO=LL,LL128".
std::string requested_pins(const CollectiveRequest& req);

// NCCL_ALGO's value that pins `pinned` as redsim simulates it under release `nccl_version`:
// "Tree" to 2.23, "allreduce:Tree" from 2.24 (PAT: "allgather:PAT;reducescatter:PAT"). Contains
// ';' only in the PAT form, which a shell file must quote.
std::string nccl_algo_value(Algorithm pinned, int nccl_version);

}  // namespace redsim::nccl
