#include "core/timeline.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace redsim {

bool operator==(const OpTiming& a, const OpTiming& b) {
  // Bitwise, so folding never merges records that print differently (and is deterministic).
  return std::memcmp(&a, &b, sizeof(OpTiming)) == 0;
}

Timeline::Timeline(std::string src, int world, std::size_t ops)
    : source(std::move(src)), world_size(world), op_count(ops),
      ops_(ops, std::vector<OpTiming>(static_cast<std::size_t>(std::max(world, 1)))) {}

Timeline Timeline::folded(std::string src, int world, std::size_t ops) {
  Timeline t;
  t.source = std::move(src);
  t.world_size = world;
  t.op_count = ops;
  t.ops_.assign(ops, std::vector<OpTiming>(1));
  return t;
}

OpTiming& Timeline::at(int rank, std::size_t op) {
  auto& r = ops_[op];
  if (r.size() == 1 && world_size > 1) r.assign(static_cast<std::size_t>(world_size), r[0]);
  return r[static_cast<std::size_t>(rank)];
}

void Timeline::set_op(std::size_t op, std::vector<OpTiming> per_rank) {
  if (per_rank.size() != static_cast<std::size_t>(world_size)) throw std::logic_error("Timeline::set_op: one record per rank");
  const bool equal = std::all_of(per_rank.begin(), per_rank.end(), [&](const OpTiming& t) { return t == per_rank[0]; });
  if (equal) {
    ops_[op].assign(1, per_rank[0]);  // a fresh one-record vector: resize(1) would keep the capacity
    ops_[op].shrink_to_fit();
    return;
  }
  ops_[op] = std::move(per_rank);
}

void Timeline::fold() {
  for (auto& r : ops_)
    if (r.size() > 1 && std::all_of(r.begin(), r.end(), [&](const OpTiming& t) { return t == r[0]; })) {
      r.resize(1);
      r.shrink_to_fit();
    }
}

std::size_t Timeline::stored_records() const {
  std::size_t n = 0;
  for (const auto& r : ops_) n += r.size();
  return n;
}

double Timeline::last_end_s() const {
  double end = 0;
  for (const auto& r : ops_)
    for (const auto& t : r) end = std::max(end, t.end_s);
  return end;
}

std::string Timeline::serialize() const {
  std::string out;
  out.reserve(ops_.size() + stored_records() * sizeof(OpTiming));
  for (const auto& r : ops_) {
    out.push_back(r.size() == 1 ? 'F' : 'R');  // folded, or one record per rank
    out.append(reinterpret_cast<const char*>(r.data()), r.size() * sizeof(OpTiming));
  }
  return out;
}

void Timeline::deserialize(const std::string& bytes) {
  std::size_t pos = 0;
  ops_.assign(op_count, {});
  for (auto& r : ops_) {
    if (pos >= bytes.size()) throw std::runtime_error("a truncated timeline");
    const std::size_t n = bytes[pos++] == 'F' ? 1 : static_cast<std::size_t>(world_size);
    if (bytes.size() - pos < n * sizeof(OpTiming)) throw std::runtime_error("a truncated timeline");
    r.resize(n);
    std::memcpy(r.data(), bytes.data() + pos, n * sizeof(OpTiming));
    pos += n * sizeof(OpTiming);
  }
  if (pos != bytes.size()) throw std::runtime_error("a timeline with trailing bytes");
}

}  // namespace redsim
