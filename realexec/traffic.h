// Bytes one rank sends and receives in a collective, by the construction of the algorithm the
// library runs (the libraries do not report them). Used for the Timeline's bytes_sent and
// bytes_received where the executor does not count the transfers itself.
#pragma once
#include <cstdint>

#include "core/pipeline.h"
#include "realexec/backend.h"

namespace redsim::realexec {

// split_piece (core/pipeline.h) is the simulator's near-equal split; split_offset is where piece
// `index` starts.
inline std::int64_t split_offset(std::int64_t total, int parts, int index) {
  const std::int64_t base = total / parts, extra = total % parts;
  return base * index + (index < extra ? index : extra);
}

// Ring allreduce (reduce-scatter then allgather): everything but one chunk, twice.
inline Traffic ring_allreduce_traffic(std::int64_t bytes, int n, int rank) {
  if (n < 2) return {};
  const std::int64_t t = 2 * (bytes - split_piece(bytes, n, rank));
  return {t, t};
}

// Chain broadcast and reduce (NCCL's ring ones; the Gloo backend's chains): every rank but the last in the chain sends the buffer once.
inline Traffic ring_chain_traffic(std::int64_t bytes, int n, int rank, int root, bool toward_root) {
  if (n < 2) return {};
  const int pos = (rank - root + n) % n;  // 0 = root
  Traffic t;
  if (!toward_root) {  // broadcast: root -> 1 -> ... -> n-1
    if (pos != n - 1) t.bytes_sent = bytes;
    if (pos != 0) t.bytes_received = bytes;
  } else {  // reduce: n-1 -> ... -> 1 -> root
    if (pos != 0) t.bytes_sent = bytes;
    if (pos != n - 1) t.bytes_received = bytes;
  }
  return t;
}

}  // namespace redsim::realexec
