// The Timeline in redsim's own JSON (redsim-timeline: op by op, per rank), read back strictly,
// and as a Chrome/Perfetto trace.
#pragma once
#include <vector>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/json_in.h"
#include "core/plan.h"
#include "core/step_summary.h"
#include "core/timeline.h"

namespace redsim {

// A Timeline covers every rank of the job (simulated, or measured by redsim run), or only the
// ranks that were observed (a profiler trace of one rank): each row names its rank in the job.
struct RankedTimeline {
  Timeline timeline;       // one row per rank observed
  std::vector<int> ranks;  // the job rank of each row
  int world_size = 0;      // the job's ranks
};

nlohmann::json timeline_to_json(const Plan& plan, const Timeline& timeline);
// Rows for some ranks of a job of world_size ranks: row i is rank ranks[i].
nlohmann::json timeline_to_json(const Plan& plan, const Timeline& timeline, const std::vector<int>& ranks,
                                int world_size);
// Reads a redsim-timeline of this plan: one-line InputErrors naming the JSON path when a rank is
// repeated or out of range, when the job's world size is not the plan's, or when a rank's ops are
// not the plan's ops. "rank" defaults to the row's index, "world_size" to the number of rows,
// "ready_s" to "start_s", bytes to 0.
// One record's members (start_s, end_s; ready_s defaults to start_s, bytes to 0), times within
// 1e9 s of the step's start; shared by both versions' readers.
// With record_ranks > 0 (a folded record of that many ranks) a member may be an array of one
// value per rank, read at rank_index.
OpTiming op_timing_from_json(const JsonIn& record, std::size_t rank_index = 0, std::size_t record_ranks = 0);
// Whether any of a record's members is such an array (version 3's columns).
bool op_timing_has_columns(const JsonIn& record);

// Version 1 (per rank, as measured runs write it) and versions 2 and 3 (folded, as simulate
// writes it; 3 adds stride runs).
RankedTimeline timeline_from_json(const JsonIn& node, const Plan& plan);

// Version 3, the folded form: op by op, each distinct record once with the ranks it stands for
// ("ranks": [[first, last], [first, last, stride], ...]: first, first + stride, ..., last; a
// stride of 1 is left out, and version 2 has no strides; a record's runs come in any order, each
// rank once). An op of more than 256 distinct records is one record whose members that differ
// between ranks are arrays of one value per rank, in the order its runs list the ranks (version
// 3). "ranks_included" (sorted runs) says which ranks of the job the file covers
// (`ranks`, sorted). Streamed to `out`: its size is the records' count, not ranks x ops.
void write_folded_timeline_json(const Plan& plan, const Timeline& timeline, const std::vector<int>& ranks,
                                const OutputSink& out);
RankedTimeline folded_timeline_from_json(const JsonIn& node, const Plan& plan);
nlohmann::json summary_to_json(const Plan& plan, const StepSummary& summary);
// The Chrome trace (Perfetto) of a timeline: core/chrome_trace.h.

}  // namespace redsim
