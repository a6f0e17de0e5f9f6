// A set of ranks as a user writes it ("all", "0,1,8-15") and as redsim's folded outputs write
// it (inclusive [first, last] ranges, or [first, last, stride] runs): which ranks a timeline
// output stands for.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace redsim {

using RankRange = std::pair<int, int>;  // first and last rank, inclusive

// "all" or a comma list of ranks and first-last ranges, each below world_size; sorted, without
// repeats. Bad input: InputError naming `option` ("--timeline-ranks: expected ...").
std::vector<int> parse_rank_set(const std::string& text, int world_size, const std::string& option);

// Sorted ranks as the fewest inclusive ranges.
std::vector<RankRange> rank_ranges(const std::vector<int>& sorted_ranks);

// Ranks first, first + stride, ..., last (last - first a multiple of stride).
struct RankRun {
  int first = 0, last = 0, stride = 1;
  bool operator==(const RankRun&) const = default;
};

// Sorted maximal ranges (as rank_ranges gives them) as runs: single ranks a fixed distance apart
// become one run. A tree's or chain's equal records fall on one rank per node (8, 16, 24, ...),
// which ranges would spell out one by one: at 16,384 ranks that is 16,384 ranges against ~100
// runs per op. Each run's ranks are all below the next run's.
std::vector<RankRun> rank_runs(const std::vector<RankRange>& ranges);

// A record's ranks (sorted ranges) as few runs, in no particular order: a stretch of ranges that
// repeats with a period (PowerSGD's records hold ranks 8, 9, 11 of every 8 over thousands of
// nodes) becomes a run per rank of the period, the rest as rank_runs writes it. Never more runs
// than ranges.
std::vector<RankRun> record_runs(const std::vector<RankRange>& ranges);

// "0-3,8,12-15", for messages and labels.
std::string rank_ranges_text(const std::vector<RankRange>& ranges);

}  // namespace redsim
