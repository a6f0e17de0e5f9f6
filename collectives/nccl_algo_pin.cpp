#include "collectives/nccl_algo_pin.h"

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

std::optional<AlgoPin> ring_fallback(OpKind kind, int nccl_version) {
  const PinFallback f = pin_fallback(nccl_version);
  if (kind == OpKind::allreduce || f == PinFallback::per_collective) return std::nullopt;
  return AlgoPin{algo_bit(Algorithm::ring), f != PinFallback::ring_restored_any_protocol};
}

AlgoPin pin_for(OpKind kind, Algorithm pinned, int nccl_version) {
  const bool has = has_algorithm(kind, pinned);
  if (pin_fallback(nccl_version) == PinFallback::per_collective) return has ? AlgoPin{algo_bit(pinned), true} : AlgoPin{};
  // PAT (the only pin redsim runs that names none of ring, tree, NVLS and NVLSTree) brings ring
  // and tree back in 2.23.
  if (pinned == Algorithm::pat)
    return {algo_bit(Algorithm::ring) | algo_bit(Algorithm::tree) | (has ? algo_bit(Algorithm::pat) : 0u), true};
  if (has || kind == OpKind::allreduce) return {algo_bit(pinned), true};
  return *ring_fallback(kind, nccl_version);
}

std::string nccl_algo_value(Algorithm pinned, int nccl_version) {
  const std::string name(nccl_algorithm_name(pinned));
  // Ring is every collective's: one name pins it everywhere in every release.
  if (pin_fallback(nccl_version) != PinFallback::per_collective || pinned == Algorithm::ring) return name;
  if (pinned == Algorithm::pat) return "allgather:" + name + ";reducescatter:" + name;
  return "allreduce:" + name;
}

}  // namespace redsim::nccl
