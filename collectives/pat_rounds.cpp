#include "collectives/pat_rounds.h"

#include <algorithm>

namespace redsim {
namespace {

int mod(int a, int n) { return ((a % n) + n) % n; }

// Shares first .. first + count - 1 (mod n), in bytes.
std::int64_t shares_from(const std::vector<std::int64_t>& shares, int first, int count) {
  const int n = static_cast<int>(shares.size());
  std::int64_t total = 0;
  for (int j = 0; j < count; ++j) total += shares[static_cast<std::size_t>(mod(first + j, n))];
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
  for (int i = 0; i < rounds; ++i) {
    const bool gather = kind != OpKind::reduce_scatter;
    const int k = gather ? i : rounds - 1 - i;
    const int d = 1 << k, count = std::min(d, n - d);
    PatRound r;
    if (gather) {
      r.send_to = mod(rank - d, n);
      r.send_bytes = shares_from(shares, rank, count);
      r.recv_from = mod(rank + d, n);
      r.recv_bytes = shares_from(shares, rank + d, count);
    } else {
      r.send_to = mod(rank + d, n);
      r.send_bytes = shares_from(shares, rank + d, count);
      r.recv_from = mod(rank - d, n);
      r.recv_bytes = shares_from(shares, rank, count);
    }
    out.push_back(r);
  }
  return out;
}

}  // namespace redsim
