#include "collectives/pat_rounds.h"

#include <algorithm>

namespace redsim {
namespace {

int mod(int a, int n) { return ((a % n) + n) % n; }

// The shares a rank `base` holds when it sends at distance d (allgather, far to near): those at
// offsets 0, 2d, 4d, ... from it that stay under n - d, so that none reaches its receiver twice.
std::int64_t held_shares(const std::vector<std::int64_t>& shares, int base, int d) {
  const int n = static_cast<int>(shares.size());
  std::int64_t total = 0;
  for (int m = 0; m + d <= n - 1; m += 2 * d) total += shares[static_cast<std::size_t>(mod(base + m, n))];
  return total;
}

}  // namespace

int pat_round_count(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

std::vector<PatRound> pat_rounds(OpKind kind, const std::vector<std::int64_t>& shares, int rank) {
  const int n = static_cast<int>(shares.size());
  const int rounds = pat_round_count(n);
  std::vector<PatRound> out;
  const bool gather = kind != OpKind::reduce_scatter;
  for (int i = 0; i < rounds; ++i) {
    const int d = 1 << (gather ? rounds - 1 - i : i);
    PatRound r;
    if (gather) {
      r.send_to = mod(rank - d, n);
      r.send_bytes = held_shares(shares, rank, d);
      r.recv_from = mod(rank + d, n);
      r.recv_bytes = held_shares(shares, rank + d, d);
    } else {
      r.send_to = mod(rank + d, n);
      r.send_bytes = held_shares(shares, rank + d, d);
      r.recv_from = mod(rank - d, n);
      r.recv_bytes = held_shares(shares, rank, d);
    }
    out.push_back(r);
  }
  return out;
}

}  // namespace redsim
