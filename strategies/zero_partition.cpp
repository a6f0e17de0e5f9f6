#include "strategies/zero_partition.h"

#include <algorithm>

namespace redsim {

std::int64_t ZeroPartition::max_shard_bytes() const {
  std::int64_t m = 0;
  for (std::size_t r = 0; r + 1 < bounds.size(); ++r) m = std::max(m, bounds[r + 1] - bounds[r]);
  return m;
}

ZeroPartition partition_parameters(const ModelTrace& trace, int world) {
  ZeroPartition part;
  part.offset_bytes.assign(trace.params.size(), -1);
  std::vector<std::size_t> flat;  // reduced params in registration order
  for (std::size_t i = 0; i < trace.params.size(); ++i) {
    if (!trace.params[i].reduced()) continue;
    part.offset_bytes[i] = part.total_bytes;
    part.total_bytes += trace.params[i].bytes();
    flat.push_back(i);
  }
  part.bounds.push_back(0);
  std::size_t k = 0;  // index into flat of the parameter containing the current target
  for (int r = 1; r < world; ++r) {
    std::int64_t target = part.total_bytes * r / world;
    while (k < flat.size() && part.offset_bytes[flat[k]] + trace.params[flat[k]].bytes() <= target) ++k;
    if (k < flat.size()) {
      const auto start = part.offset_bytes[flat[k]];
      const auto elem = dtype_size_bytes(trace.params[flat[k]].dtype);
      target = start + (target - start) / elem * elem;  // snap down to an element boundary
    }
    part.bounds.push_back(std::max(target, part.bounds.back()));
  }
  part.bounds.push_back(part.total_bytes);
  return part;
}

namespace {

// Appends the pieces of parameter p within [begin, end) of the flat space, tagged by owner.
void cut(const ModelTrace& trace, const ZeroPartition& part, std::size_t p, std::int64_t begin, std::int64_t end,
         std::vector<std::pair<int, ParamSlice>>& out) {
  const auto off = part.offset_bytes[p];
  const auto elem = dtype_size_bytes(trace.params[p].dtype);
  const std::int64_t lo = std::max(begin, off), hi = std::min(end, off + trace.params[p].bytes());
  const int world = static_cast<int>(part.bounds.size()) - 1;
  if (lo >= hi) return;
  // The first owner whose range ends after lo (bounds are sorted): owners before it hold none of
  // [lo, hi), and scanning them made a 131,072-rank plan quadratic.
  const auto first = std::upper_bound(part.bounds.begin() + 1, part.bounds.end(), lo) - (part.bounds.begin() + 1);
  for (int r = static_cast<int>(first); r < world && part.bounds[static_cast<std::size_t>(r)] < hi; ++r) {
    const std::int64_t a = std::max(lo, part.bounds[static_cast<std::size_t>(r)]);
    const std::int64_t b = std::min(hi, part.bounds[static_cast<std::size_t>(r) + 1]);
    if (a < b) out.push_back({r, ParamSlice{p, (a - off) / elem, (b - a) / elem}});
  }
}

// world = 0: slices only, no per-rank counts (an allgather slice per rank would otherwise clear
// a world-sized array per rank: 131,072 ranks squared).
OwnedSlices group(std::vector<std::pair<int, ParamSlice>> pieces, int world) {
  std::stable_sort(pieces.begin(), pieces.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  OwnedSlices o;
  if (world == 0) {
    for (const auto& piece : pieces) o.slices.push_back(piece.second);
    return o;
  }
  o.owner_elems.assign(static_cast<std::size_t>(world), 0);
  for (const auto& [owner, s] : pieces) {
    o.slices.push_back(s);
    o.owner_elems[static_cast<std::size_t>(owner)] += s.numel;
  }
  return o;
}

}  // namespace

OwnedSlices slices_by_owner(const ModelTrace& trace, const ZeroPartition& part, const std::vector<std::size_t>& params) {
  std::vector<std::pair<int, ParamSlice>> pieces;
  for (auto p : params) cut(trace, part, p, 0, part.total_bytes, pieces);
  return group(std::move(pieces), static_cast<int>(part.bounds.size()) - 1);
}

std::vector<ParamSlice> slices_in_range(const ModelTrace& trace, const ZeroPartition& part, std::int64_t begin,
                                        std::int64_t end) {
  std::vector<std::pair<int, ParamSlice>> pieces;
  for (std::size_t p = 0; p < trace.params.size(); ++p)
    if (part.offset_bytes[p] >= 0 && part.offset_bytes[p] < end && part.offset_bytes[p] + trace.params[p].bytes() > begin)
      cut(trace, part, p, begin, end, pieces);
  return group(std::move(pieces), 0).slices;
}

}  // namespace redsim
