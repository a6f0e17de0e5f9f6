#include "cli/nccl_tests_sweep.h"

#include <algorithm>
#include <string>

#include "collectives/nccl_algo_pin.h"
#include "collectives/nccl_constants.h"
#include "collectives/nccl_topology.h"
#include "core/error.h"

namespace redsim::cli {

std::string run_heading(const NcclTestsRun& r) {
  return r.file + " line " + std::to_string(r.first_line) + ": " + std::string(op_kind_name(r.op)) + ", " +
         std::to_string(r.ranks) + " ranks (" + std::to_string(r.nodes) + " x " + std::to_string(r.devices_per_node) +
         "), -g " + std::to_string(r.gpus_per_thread) + ", -n " + std::to_string(r.iters);
}

SweepOptions sweep_for_run(const NcclTestsRun& run) {
  SweepOptions o;
  o.ops = {run.op};
  for (const auto& r : run.rows) o.sizes.push_back(r.size_bytes);
  if (!run.rows.empty()) {
    o.dtype = nccl_tests_dtype(run.rows.front().type).value_or(DType::fp32);  // the reader refused unknown types
    o.root = run.rows.front().root >= 0 ? run.rows.front().root : 0;
    // The reader refused unknown reductions; "none" and old logs without the column reduce by sum.
    o.redop = nccl_tests_redop(run.rows.front().redop).value_or(ReduceOp::sum);
  }
  o.gpus_per_process = run.gpus_per_thread;
  o.iters = run.iters;
  // The NCCL_ALGO / NCCL_PROTO the run's NCCL printed, as NCCL reads them.
  o.request.algorithm_list = run.nccl_algo;
  o.request.protocol_list = run.nccl_proto;
  return o;
}

int logged_channels(const ClusterSpec& layout, const NcclTestsRun& run) {
  if (layout.library != CollectiveLibrary::nccl || (!run.nccl_min_channels && !run.nccl_max_channels)) return 0;
  const int most = nccl::max_channels_of(layout.nccl_version);
  const auto clamp = [most](std::optional<long long> v, long long lo, long long fallback) {
    return static_cast<int>(v ? std::clamp<long long>(*v, lo, most) : fallback);
  };
  const int lo = clamp(run.nccl_min_channels, 0, 0), hi = clamp(run.nccl_max_channels, 1, most);
  const int natural = nccl::topology_of(layout).comm_channels;
  const int bounded = std::max(lo, std::min(natural, hi));
  return bounded == natural ? 0 : bounded;
}

std::string ignored_list_note(const ClusterSpec& layout, const CollectiveRequest& request) {
  if (layout.library != CollectiveLibrary::nccl || !request.algorithm_list) return "";
  return nccl::ignored_list_reason(request, layout.nccl_version, {layout.nodes, nccl::topology_of(layout).nvls});
}

std::vector<SweepRow> simulate_run(const ClusterSpec& layout, const NcclTestsRun& run, SweepOptions o) {
  if (o.request.channels == 0) o.request.channels = logged_channels(layout, run);
  auto rows = collective_sweep(layout, o);
  if (rows.size() != run.rows.size())
    throw InputError(run.file, "line " + std::to_string(run.first_line),
                     "sizes of at least one element per rank (nccl-tests skips smaller ones)");
  return rows;
}

}  // namespace redsim::cli
