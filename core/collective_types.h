// Names shared by Plans, knobs and engines: collective kinds, algorithms, protocols and reduce ops.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "core/nccl_list.h"

namespace redsim {

enum class ReduceOp { sum, avg, max, min, prod };

// NCCL's algorithms (NCCL_ALGO) plus `hierarchical`, a two-level ring (intra-node
// reduce-scatter, inter-node allreduce, intra-node allgather: Horovod's hierarchical allreduce)
// that NCCL itself does not offer.
// binomial: Gloo's broadcast (gloo::broadcast, what PyTorch's ProcessGroupGloo calls), which
// plans request for PyTorch's own broadcasts on clusters with ideal collectives; not a knob value.
// pat: NCCL's Parallel Aggregated Trees (2.23+), allgather and reduce-scatter with one GPU a node.
enum class Algorithm { ring, tree, nvls, nvls_tree, collnet_direct, collnet_chain, hierarchical, binomial, pat };
// NCCL's protocols (NCCL_PROTO): LL (8-byte flagged stores, half payload), LL128 (128-byte lines,
// 120 bytes payload), Simple (bulk copies with a fence and flag per step).
enum class Protocol { ll, ll128, simple };

std::string_view reduce_op_name(ReduceOp op);
std::optional<ReduceOp> parse_reduce_op(std::string_view name);
// Names as redsim prints them: ring, tree, nvls, nvlstree, collnet_direct, collnet_chain,
// hierarchical, pat; ll, ll128, simple.
std::string_view algorithm_name(Algorithm a);
std::string_view protocol_name(Protocol p);
// Case-insensitive; NCCL's spellings (Ring, Tree, NVLS, NVLSTree, CollNetDirect, CollNetChain,
// CollNet = collnet_direct, PAT; LL, LL128, Simple) are accepted as well as redsim's.
std::optional<Algorithm> parse_algorithm(std::string_view name);
std::optional<Protocol> parse_protocol(std::string_view name);
// The spellings NCCL_ALGO / NCCL_PROTO take ("Ring", "NVLSTree", "LL128", ...); empty for
// hierarchical, which NCCL has no name for.
std::string_view nccl_algorithm_name(Algorithm a);
std::string_view nccl_protocol_name(Protocol p);

// What a collective asks of the collective model; an unset member (or 0 channels) lets the model
// choose as NCCL would.
struct CollectiveRequest {
  std::optional<Algorithm> algorithm;
  std::optional<Protocol> protocol;
  int channels = 0;
  // NCCL_ALGO / NCCL_PROTO given as a list, an exclusion or per collective (core/nccl_list.h),
  // set instead of algorithm / protocol: NCCL's model ranks what the list leaves.
  std::optional<NcclList> algorithm_list = std::nullopt;
  std::optional<NcclList> protocol_list = std::nullopt;
};
// What a request asks for as knobs files and plans write it: "auto", a name, or an NCCL list in
// NCCL's spellings; parse_algorithm_setting / parse_protocol_setting read it back.
std::string requested_algorithm(const CollectiveRequest& req);
std::string requested_protocol(const CollectiveRequest& req);

}  // namespace redsim
