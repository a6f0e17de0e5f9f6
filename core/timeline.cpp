#include "core/timeline.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <unordered_map>
#include <utility>

namespace redsim {

std::size_t OpTimingHash::operator()(const OpTiming& t) const {
  static_assert(sizeof(OpTiming) % sizeof(std::uint64_t) == 0);
  std::uint64_t words[sizeof(OpTiming) / sizeof(std::uint64_t)];
  std::memcpy(words, &t, sizeof words);
  std::uint64_t h = 1469598103934665603ULL;
  for (auto w : words) h = (h ^ w) * 1099511628211ULL;
  return static_cast<std::size_t>(h ^ (h >> 29));
}

bool operator==(const OpTiming& a, const OpTiming& b) {
  // Bitwise, so folding never merges records that print differently (and is deterministic).
  return std::memcmp(&a, &b, sizeof(OpTiming)) == 0;
}

namespace {

constexpr std::size_t kMaxIndexed = 65535;  // distinct records an index of uint16 can address

}  // namespace

Timeline::Timeline(std::string src, int world, std::size_t ops)
    : source(std::move(src)), world_size(world), op_count(ops),
      ops_(ops, std::vector<OpTiming>(static_cast<std::size_t>(std::max(world, 1)))), index_(ops), except_(ops) {}

Timeline Timeline::folded(std::string src, int world, std::size_t ops) {
  Timeline t;
  t.source = std::move(src);
  t.world_size = world;
  t.op_count = ops;
  t.ops_.assign(ops, std::vector<OpTiming>(1));
  t.index_.assign(ops, {});
  t.except_.assign(ops, {});
  return t;
}

std::size_t Timeline::sparse_slot(std::size_t op, int rank) const {
  const auto& ex = except_[op];
  const auto it = std::lower_bound(ex.begin(), ex.end(), rank);
  return it != ex.end() && *it == rank ? 1 + static_cast<std::size_t>(it - ex.begin()) : 0;
}

void Timeline::set_op_sparse(std::size_t op, const OpTiming& every_rank, std::vector<std::pair<int, OpTiming>> exceptions) {
  std::sort(exceptions.begin(), exceptions.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<OpTiming> records{every_rank};
  std::vector<int> ranks;
  for (const auto& [rank, t] : exceptions) {
    if (rank < 0 || rank >= world_size || (!ranks.empty() && ranks.back() == rank))
      throw std::logic_error("Timeline::set_op_sparse: exception ranks distinct and in the world");
    if (t == every_rank) continue;
    ranks.push_back(rank);
    records.push_back(t);
  }
  index_[op] = {};
  if (ranks.size() > static_cast<std::size_t>(world_size) / 4) {  // not sparse: a record per rank
    std::vector<OpTiming> per_rank(static_cast<std::size_t>(world_size), every_rank);
    for (std::size_t i = 0; i < ranks.size(); ++i) per_rank[static_cast<std::size_t>(ranks[i])] = records[i + 1];
    except_[op] = {};
    set_op(op, per_rank);
    return;
  }
  records.shrink_to_fit();
  ops_[op] = std::move(records);
  except_[op] = std::move(ranks);
}

bool Timeline::op_times_uniform(std::size_t op) const {
  const auto& r = ops_[op];
  return std::all_of(r.begin(), r.end(), [&](const OpTiming& t) {
    return t.ready_s == r[0].ready_s && t.start_s == r[0].start_s && t.end_s == r[0].end_s;
  });
}

OpTiming& Timeline::mutable_at(int rank, std::size_t op) {
  auto& r = ops_[op];
  if (!index_[op].empty()) {
    std::vector<OpTiming> full(static_cast<std::size_t>(world_size));
    for (std::size_t q = 0; q < full.size(); ++q) full[q] = r[index_[op][q]];
    r = std::move(full);
    index_[op] = {};
  } else if (!except_[op].empty()) {
    std::vector<OpTiming> full(static_cast<std::size_t>(world_size), r[0]);
    for (std::size_t i = 0; i < except_[op].size(); ++i) full[static_cast<std::size_t>(except_[op][i])] = r[i + 1];
    r = std::move(full);
    except_[op] = {};
  } else if (r.size() == 1 && world_size > 1) {
    r.assign(static_cast<std::size_t>(world_size), r[0]);
  }
  return r[static_cast<std::size_t>(rank)];
}

void Timeline::set_op(std::size_t op, const std::vector<OpTiming>& per_rank) {
  if (per_rank.size() != static_cast<std::size_t>(world_size)) throw std::logic_error("Timeline::set_op: one record per rank");
  index_[op] = {};
  except_[op] = {};
  const bool equal = std::all_of(per_rank.begin(), per_rank.end(), [&](const OpTiming& t) { return t == per_rank[0]; });
  if (equal) {
    ops_[op].assign(1, per_rank[0]);  // a fresh one-record vector: resize(1) would keep the capacity
    ops_[op].shrink_to_fit();
    return;
  }
  // Indexed when the distinct records are few enough that index + records beat a record per rank.
  const std::size_t limit = std::min(kMaxIndexed, per_rank.size() / 4);
  std::unordered_map<OpTiming, std::uint16_t, OpTimingHash> seen;
  std::vector<OpTiming> distinct;
  std::vector<std::uint16_t> index(per_rank.size());
  for (std::size_t q = 0; q < per_rank.size(); ++q) {
    auto [it, fresh] = seen.emplace(per_rank[q], static_cast<std::uint16_t>(distinct.size()));
    if (fresh) {
      if (distinct.size() >= limit) {
        ops_[op] = per_rank;
        return;
      }
      distinct.push_back(per_rank[q]);
    }
    index[q] = it->second;
  }
  ops_[op] = std::move(distinct);
  index_[op] = std::move(index);
}

void Timeline::compact(std::size_t op) {
  if (ops_[op].size() <= 1 || !index_[op].empty() || !except_[op].empty()) return;
  const std::vector<OpTiming> per_rank = std::move(ops_[op]);
  set_op(op, per_rank);
}

void Timeline::fold() {
  for (std::size_t op = 0; op < ops_.size(); ++op) compact(op);
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
  for (std::size_t op = 0; op < ops_.size(); ++op) {
    const auto& r = ops_[op];
    if (!index_[op].empty()) {  // indexed: the count, the records, then each rank's index
      out.push_back('I');
      const auto n = static_cast<std::uint32_t>(r.size());
      out.append(reinterpret_cast<const char*>(&n), sizeof n);
      out.append(reinterpret_cast<const char*>(r.data()), r.size() * sizeof(OpTiming));
      out.append(reinterpret_cast<const char*>(index_[op].data()), index_[op].size() * sizeof(std::uint16_t));
      continue;
    }
    if (!except_[op].empty()) {  // sparse: the exception count, the default and exception records, the ranks
      out.push_back('S');
      const auto n = static_cast<std::uint32_t>(except_[op].size());
      out.append(reinterpret_cast<const char*>(&n), sizeof n);
      out.append(reinterpret_cast<const char*>(r.data()), r.size() * sizeof(OpTiming));
      out.append(reinterpret_cast<const char*>(except_[op].data()), except_[op].size() * sizeof(int));
      continue;
    }
    out.push_back(r.size() == 1 ? 'F' : 'R');  // folded, or one record per rank
    out.append(reinterpret_cast<const char*>(r.data()), r.size() * sizeof(OpTiming));
  }
  return out;
}

void Timeline::deserialize(const std::string& bytes) {
  std::size_t pos = 0;
  ops_.assign(op_count, {});
  index_.assign(op_count, {});
  except_.assign(op_count, {});
  auto take = [&](void* dst, std::size_t n) {
    if (bytes.size() - pos < n) throw std::runtime_error("a truncated timeline");
    std::memcpy(dst, bytes.data() + pos, n);
    pos += n;
  };
  for (std::size_t op = 0; op < op_count; ++op) {
    if (pos >= bytes.size()) throw std::runtime_error("a truncated timeline");
    const char kind = bytes[pos++];
    std::size_t n = kind == 'F' ? 1 : static_cast<std::size_t>(world_size);
    if (kind == 'I') {
      std::uint32_t count = 0;
      take(&count, sizeof count);
      if (count == 0 || count > kMaxIndexed) throw std::runtime_error("an inconsistent timeline");
      n = count;
    }
    std::uint32_t exceptions = 0;
    if (kind == 'S') {
      take(&exceptions, sizeof exceptions);
      if (exceptions == 0 || exceptions > static_cast<std::uint32_t>(world_size)) throw std::runtime_error("an inconsistent timeline");
      n = exceptions + 1;
    } else if (kind != 'F' && kind != 'R' && kind != 'I') {
      throw std::runtime_error("an inconsistent timeline");
    }
    ops_[op].resize(n);
    take(ops_[op].data(), n * sizeof(OpTiming));
    if (kind == 'S') {
      except_[op].resize(exceptions);
      take(except_[op].data(), except_[op].size() * sizeof(int));
      for (std::size_t i = 0; i < except_[op].size(); ++i)
        if (except_[op][i] < 0 || except_[op][i] >= world_size || (i && except_[op][i] <= except_[op][i - 1]))
          throw std::runtime_error("an inconsistent timeline");
    }
    if (kind == 'I') {
      index_[op].resize(static_cast<std::size_t>(world_size));
      take(index_[op].data(), index_[op].size() * sizeof(std::uint16_t));
      for (auto i : index_[op])
        if (i >= n) throw std::runtime_error("an inconsistent timeline");
    }
  }
  if (pos != bytes.size()) throw std::runtime_error("a timeline with trailing bytes");
}

}  // namespace redsim
