// A set of ranks as a user writes it ("all", "0,1,8-15") and as redsim's folded outputs write
// it (inclusive [first, last] ranges): which ranks a timeline output stands for.
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

// "0-3,8,12-15", for messages and labels.
std::string rank_ranges_text(const std::vector<RankRange>& ranges);

}  // namespace redsim
