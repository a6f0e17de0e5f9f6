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
