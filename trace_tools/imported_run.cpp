#include "trace_tools/imported_run.h"

#include <algorithm>
#include <stdexcept>

#include "core/result_json.h"
#include "strategies/strategy.h"

namespace redsim {

ImportedRun imported_run(const KinetoImport& imp) {
  ImportedRun r;
  r.knobs = imported_bucket_knobs(imp);
  r.cluster.name = "measured";
  r.cluster.nodes = 1;
  r.cluster.devices_per_node = std::max(1, imp.world_size);
  r.cluster.device.name = imp.device;
  r.plan = make_strategy(r.knobs.strategy)->plan(imp.trace, r.cluster, r.knobs);
  // The plan must form exactly the measured buckets.
  std::size_t plan_buckets = 0;
  for (const auto& op : r.plan.ops) plan_buckets += op.kind == OpKind::allreduce ? 1 : 0;
  if (plan_buckets != imp.buckets.size())
    throw std::logic_error("trace import: the bucketed plan has " + std::to_string(plan_buckets) +
                           " allreduces for " + std::to_string(imp.buckets.size()) + " imported buckets");
  // The channels NCCL ran each bucket on, where the profile says (its algorithm and protocol it
  // does not: one kernel name serves several); the summary and timeline report them.
  for (auto& op : r.plan.ops) {
    const auto b = static_cast<std::size_t>(op.bucket);
    if (op.kind == OpKind::allreduce && op.bucket >= 0 && b < imp.buckets.size() && imp.buckets[b].channels > 0)
      op.channels = imp.buckets[b].channels;
  }
  r.timeline = imported_timeline(r.plan, imp);
  r.summary = summarize(r.plan, r.timeline);
  return r;
}

nlohmann::json imported_result_json(const KinetoImport& imp, const ImportedRun& run, const std::string& trace_file,
                                    const std::string& kineto_file) {
  const ResultInputs inputs{trace_file, &imp.trace, "", &run.cluster,
                            {{"name", "kineto-import"},
                             {"file", kineto_file},
                             {"steps", imp.steps},
                             {"step", imp.step_text},
                             {"rank", imp.rank}}};
  // The timeline is the profiled rank's, of the mean step; each step's own time is measured.
  Measurement measurement{imp.step_times_s, -1, {{"timeline_step", imp.step_text}}};
  const RedsimResult result{inputs,         &run.knobs, &run.plan, &run.summary, &run.timeline, {imp.rank},
                            std::move(measurement)};
  return result_to_json(result);
}

}  // namespace redsim
