#include "collectives/nccl_constants.h"

#include <algorithm>
#include <cmath>

namespace redsim::nccl {

int algo_index(Algorithm a) {
  switch (a) {
    case Algorithm::tree: return 0;
    case Algorithm::ring: return 1;
    case Algorithm::collnet_direct: return 2;
    case Algorithm::collnet_chain: return 3;
    case Algorithm::nvls: return 4;
    case Algorithm::nvls_tree: return 5;
    case Algorithm::hierarchical:
    case Algorithm::binomial:
    case Algorithm::pat: return -1;  // PAT's constants are its own (kPat*), not in the tables
  }
  return -1;
}

int proto_index(Protocol p) { return p == Protocol::ll ? 0 : p == Protocol::ll128 ? 1 : 2; }

Algorithm algo_of_index(int i) {
  constexpr std::array<Algorithm, kAlgoCount> a{Algorithm::tree, Algorithm::ring, Algorithm::collnet_direct,
                                                 Algorithm::collnet_chain, Algorithm::nvls, Algorithm::nvls_tree};
  return a[static_cast<std::size_t>(i)];
}

Protocol proto_of_index(int i) { return i == 0 ? Protocol::ll : i == 1 ? Protocol::ll128 : Protocol::simple; }

double tree_correction(const TreeCorrection& table, Protocol p, std::int64_t bytes, bool one_longer) {
  const auto& row = table[static_cast<std::size_t>(proto_index(p))];
  if (bytes < 64) return row[0];
  const int i = static_cast<int>(std::floor(std::log2(static_cast<double>(bytes >> 6))));
  if (i == 23 && one_longer) return p == Protocol::simple ? 0.9 : 1.0;
  if (i >= 23) return 1.0;
  return row[static_cast<std::size_t>(std::max(0, i))];
}

double tree_correction(Protocol p, std::int64_t bytes) { return tree_correction(kTreeCorrection, p, bytes); }

}  // namespace redsim::nccl
