#include "core/rank_set.h"

#include <algorithm>
#include <charconv>

#include "core/error.h"

namespace redsim {

namespace {

int parse_rank(std::string_view s, int world_size, const std::string& option, const std::string& text) {
  int v = -1;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 0 || v >= world_size)
    throw InputError("", option,
                     "expected \"all\" or ranks and first-last ranges below the world size " +
                         std::to_string(world_size) + " separated by commas, got \"" + text + "\"");
  return v;
}

}  // namespace

std::vector<int> parse_rank_set(const std::string& text, int world_size, const std::string& option) {
  std::vector<int> out;
  if (text == "all") {
    for (int r = 0; r < world_size; ++r) out.push_back(r);
    return out;
  }
  std::string_view rest = text;
  while (true) {
    const auto comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const auto dash = item.find('-');
    const int first = parse_rank(item.substr(0, dash), world_size, option, text);
    const int last = dash == std::string_view::npos ? first : parse_rank(item.substr(dash + 1), world_size, option, text);
    if (last < first) parse_rank("-", world_size, option, text);  // a range that runs backwards
    for (int r = first; r <= last; ++r) out.push_back(r);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<RankRange> rank_ranges(const std::vector<int>& sorted_ranks) {
  std::vector<RankRange> out;
  for (int r : sorted_ranks) {
    if (!out.empty() && out.back().second + 1 == r) out.back().second = r;
    else out.emplace_back(r, r);
  }
  return out;
}

std::vector<RankRun> rank_runs(const std::vector<RankRange>& ranges) {
  std::vector<RankRun> runs;
  for (const auto& [first, last] : ranges) {
    if (first == last && !runs.empty()) {
      RankRun& r = runs.back();
      if (r.first == r.last) {  // a single rank: the second makes it a run of their distance
        r.last = first, r.stride = first - r.first;
        continue;
      }
      if (first - r.last == r.stride) {
        r.last = first;
        continue;
      }
    }
    runs.push_back({first, last, 1});
  }
  return runs;
}

namespace {

constexpr std::size_t kMaxLanes = 16;  // ranges per period looked for
constexpr int kMaxLaneWidth = 64;      // ranks per range, each of which becomes a run of its own
constexpr std::size_t kMinPeriods = 3;

// The ranges from i on that repeat k to a period, each the one k before it shifted by d:
// their count, or 0 when that is under kMinPeriods periods or no fewer runs than ranges.
std::size_t periodic_stretch(const std::vector<RankRange>& rs, std::size_t i, std::size_t k) {
  if (i + k * kMinPeriods > rs.size()) return 0;
  const int d = rs[i + k].first - rs[i].first;
  std::size_t e = i + k;
  while (e < rs.size() && rs[e].first == rs[e - k].first + d && rs[e].second == rs[e - k].second + d) ++e;
  const std::size_t n = e - i;
  if (n < kMinPeriods * k) return 0;
  std::size_t lane_runs = 0;
  for (std::size_t l = 0; l < k; ++l) {
    const int width = rs[i + l].second - rs[i + l].first + 1;
    if (width > kMaxLaneWidth) return 0;
    lane_runs += static_cast<std::size_t>(width);
  }
  return lane_runs < n ? n : 0;
}

// A periodic stretch as runs: for each of its k lanes, each rank of the lane's range repeated
// every d ranks.
void append_lanes(const std::vector<RankRange>& rs, std::size_t i, std::size_t n, std::size_t k,
                  std::vector<RankRun>& runs) {
  const int d = rs[i + k].first - rs[i].first;
  for (std::size_t l = 0; l < k; ++l) {
    const int periods = static_cast<int>((n - l + k - 1) / k);
    for (int r = rs[i + l].first; r <= rs[i + l].second; ++r) runs.push_back({r, r + (periods - 1) * d, d});
  }
}

}  // namespace

std::vector<RankRun> record_runs(const std::vector<RankRange>& ranges) {
  std::vector<RankRun> runs;
  std::vector<RankRange> rest;  // ranges in no periodic stretch
  auto flush = [&] {
    for (const RankRun& r : rank_runs(rest)) runs.push_back(r);
    rest.clear();
  };
  std::size_t i = 0;
  while (i < ranges.size()) {
    std::size_t best_k = 0, best_n = 0;
    for (std::size_t k = 1; k <= kMaxLanes && i + best_n < ranges.size(); ++k)  // until one reaches the end
      if (const std::size_t n = periodic_stretch(ranges, i, k); n > best_n) best_k = k, best_n = n;
    if (best_n == 0) {
      rest.push_back(ranges[i++]);
      continue;
    }
    flush();
    append_lanes(ranges, i, best_n, best_k, runs);
    i += best_n;
  }
  flush();
  return runs;
}

std::string rank_ranges_text(const std::vector<RankRange>& ranges) {
  std::string s;
  for (const auto& [a, b] : ranges) {
    if (!s.empty()) s += ',';
    s += std::to_string(a);
    if (b != a) s += '-' + std::to_string(b);
  }
  return s;
}

}  // namespace redsim
