// An imported profiler trace (kineto_import.h) as redsim runs it: the bucketed Plan of the
// imported trace on the profiled job (one node of the job's world size, named after the
// profiled GPU), the profiled rank's measured Timeline of that Plan, and the measured result
// `redsim trace import --measured` writes for `redsim validate --measured` (core/result_json).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "core/cluster.h"
#include "core/knobs.h"
#include "core/plan.h"
#include "core/step_summary.h"
#include "core/timeline.h"
#include "trace_tools/kineto_import.h"

namespace redsim {

struct ImportedRun {
  ClusterSpec cluster;
  Knobs knobs;  // imported_bucket_knobs
  Plan plan;
  Timeline timeline;  // one row: the profiled rank
  StepSummary summary;
};

// Throws std::logic_error if the Plan does not form exactly the imported buckets.
ImportedRun imported_run(const KinetoImport& imp);

// trace_file: where the imported trace is written; kineto_file: the profiler trace it came from.
nlohmann::json imported_result_json(const KinetoImport& imp, const ImportedRun& run, const std::string& trace_file,
                                    const std::string& kineto_file);

}  // namespace redsim
