// Checks a `redsim run --out` result against the Plan it measured (rebuilt from the trace,
// cluster and knobs the result names): every op of the Plan on every rank, in Plan order per
// stream, each after its dependencies; verification passed; per-step times consistent; the
// memory each rank held adds up, over the ranks, to the model state counted from the trace's
// tensors (each sharded element held by one rank per replica, the rest by every rank).
// Usage: check_measured RESULT.json [--scaled]   (--scaled: the buffer scale must be below 1)
// Prints one line per problem and exits 1 if there are any.
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "core/cluster_json.h"
#include "core/json_in.h"
#include "core/knobs_json.h"
#include "core/trace_json.h"
#include "strategies/fsdp.h"
#include "strategies/memory_model.h"
#include "strategies/strategy.h"

using namespace redsim;

namespace {

// Sums over the ranks, from first principles: P parameter bytes, G gradient bytes and O Adam
// bytes (8 per fp32 element, 12 per 16-bit one) of the trace; a kind the ZeRO stage shards is
// held once per replica (hsdp: world / shard group replicas), the others by every rank.
void check_memory(const json& mem, const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& knobs,
                  const Plan& plan, double scale, std::vector<std::string>& bad) {
  std::int64_t P = 0, G = 0, O = 0;
  for (const auto& p : trace.params) {
    P += p.numel * dtype_size_bytes(p.dtype);
    if (!p.trainable) continue;
    G += p.numel * dtype_size_bytes(p.dtype);
    O += p.numel * (dtype_size_bytes(p.dtype) >= 4 ? 8 : 12);
  }
  const int N = cluster.world_size(), stage = model_state_stage(knobs);
  const int replicas = knobs.strategy == "hsdp" ? N / hsdp_shard_group(cluster, knobs) : 1;
  std::int64_t buffers = 0;
  for (const auto& op : plan.ops) buffers += op_kind_is_collective(op.kind) ? op.bytes : 0;
  const auto& ranks = mem.at("ranks");
  if (static_cast<int>(ranks.size()) != N) bad.push_back("memory lists " + std::to_string(ranks.size()) + " ranks");
  std::int64_t params = 0, grads = 0, optimizer = 0;
  for (const auto& rk : ranks) {
    params += rk.at("params_bytes").get<std::int64_t>();
    grads += rk.at("grads_bytes").get<std::int64_t>();
    optimizer += rk.at("optimizer_bytes").get<std::int64_t>();
    const std::int64_t held = rk.at("total_bytes").get<std::int64_t>();
    // Every held byte was written before the steps, so it was resident at once.
    if (rk.at("peak_rss_bytes").get<std::int64_t>() < held)
      bad.push_back("rank " + rk.at("rank").dump() + "'s peak RSS is below the " + std::to_string(held) + " bytes it held");
    if (scale == 1.0 && rk.at("buffer_bytes").get<std::int64_t>() != buffers)
      bad.push_back("rank " + rk.at("rank").dump() + " held " + rk.at("buffer_bytes").dump() + " bytes of buffers, the plan's collectives " +
                    std::to_string(buffers));
  }
  for (const auto& rk : ranks)
    if (rk.at("model_state_scale").get<double>() != 1.0) return;  // scaled: each kind rounded on its own
  if (scale != 1.0) return;
  const auto want = [&](const char* what, std::int64_t got, std::int64_t expected) {
    if (got != expected)
      bad.push_back(std::string("ranks held ") + std::to_string(got) + " bytes of " + what + " in all, expected " +
                    std::to_string(expected));
  };
  want("parameters", params, (stage >= 3 ? replicas : N) * P);
  want("gradients", grads, (stage >= 2 ? replicas : N) * G);
  want("optimizer state", optimizer, (stage >= 1 ? replicas : N) * O);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: check_measured RESULT.json [--scaled]\n";
    return 2;
  }
  const bool want_scaled = argc > 2 && std::string(argv[2]) == "--scaled";
  std::vector<std::string> bad;
  try {
    const json r = JsonIn::parse_file(argv[1]);
    if (r.at("format") != "redsim-result") bad.push_back("format is not redsim-result");
    if (r.at("engine").at("kind") != "measured") bad.push_back("engine.kind is not measured");
    const auto trace = load_trace(r.at("trace").at("file").get<std::string>());
    const auto cluster = load_cluster(r.at("cluster").at("file").get<std::string>());
    const Knobs knobs = knobs_from_json(r.at("knobs"), argv[1], "$.knobs", Knobs{});
    const Plan plan = make_strategy(knobs.strategy)->plan(trace, cluster, knobs);
    const auto& m = r.at("measurement");
    if (m.at("verification").at("status") != "passed") bad.push_back("verification did not pass");
    const int steps = m.at("steps").get<int>();
    const auto times = m.at("step_times_s").get<std::vector<double>>();
    if (static_cast<int>(times.size()) != steps) bad.push_back("step_times_s has " + std::to_string(times.size()) + " steps");
    const int median = m.at("median_step").get<int>();
    if (median < 0 || median >= static_cast<int>(times.size()) ||
        times[static_cast<std::size_t>(median)] != m.at("step_time_median_s").get<double>())
      bad.push_back("median_step does not index step_time_median_s");
    const double scale = m.at("buffer_scale").get<double>();
    if (want_scaled && !(scale < 1.0)) bad.push_back("buffer_scale is " + std::to_string(scale) + ", expected below 1");
    if (!want_scaled && scale != 1.0) bad.push_back("buffer_scale is " + std::to_string(scale) + ", expected 1");
    if (m.at("buffer_scale_reason").get<std::string>().empty()) bad.push_back("no buffer_scale_reason");
    const std::int64_t checked = m.at("verification").at("buffers_checked").get<std::int64_t>();
    std::int64_t collectives = 0;
    for (const auto& op : plan.ops) collectives += op_kind_is_collective(op.kind) ? 1 : 0;
    const std::int64_t want_checked =
        collectives * cluster.world_size() * (steps + m.at("warmup_steps").get<std::int64_t>());
    if (checked != want_checked)
      bad.push_back("verification checked " + std::to_string(checked) + " buffers, expected " + std::to_string(want_checked));

    const auto& tl = r.at("timeline");
    if (tl.at("source") != "measured") bad.push_back("timeline.source is not measured");
    const auto& ranks = tl.at("ranks");
    if (static_cast<int>(ranks.size()) != cluster.world_size())
      bad.push_back("timeline has " + std::to_string(ranks.size()) + " ranks");
    for (std::size_t rk = 0; rk < ranks.size(); ++rk) {
      const auto& ops = ranks[rk].at("ops");
      if (ops.size() != plan.ops.size()) {
        bad.push_back("rank " + std::to_string(rk) + " has " + std::to_string(ops.size()) + " ops, the plan " +
                      std::to_string(plan.ops.size()));
        continue;
      }
      std::vector<double> stream_end(plan.streams.size(), -1.0);
      for (const auto& op : plan.ops) {
        const auto& t = ops[op.id];
        const std::string where = "rank " + std::to_string(rk) + " op " + std::to_string(op.id) + " " + op.name;
        if (t.at("op").get<std::uint32_t>() != op.id) bad.push_back(where + ": listed out of order");
        const double ready = t.at("ready_s"), start = t.at("start_s"), end = t.at("end_s");
        if (!(end > 0) || start < ready - 1e-9 || end < start) bad.push_back(where + ": bad ready/start/end");
        if (start < stream_end[op.stream] - 1e-9) bad.push_back(where + ": starts before its stream's previous op ended");
        stream_end[op.stream] = end;
        for (auto d : op.deps)
          if (start < ops[d].at("end_s").get<double>() - 1e-9)
            bad.push_back(where + ": starts before dependency " + std::to_string(d) + " ended");
        if (op_kind_is_collective(op.kind) && cluster.world_size() > 1 && op.bytes > 0 &&
            t.at("bytes_sent").get<std::int64_t>() + t.at("bytes_received").get<std::int64_t>() == 0)
          bad.push_back(where + ": moved no bytes");
      }
    }
    check_memory(m.at("memory"), trace, cluster, knobs, plan, scale, bad);
    if (r.at("summary").at("collectives").size() != static_cast<std::size_t>(collectives))
      bad.push_back("summary lists a different number of collectives");
  } catch (const std::exception& e) {
    bad.push_back(std::string("cannot read the result: ") + e.what());
  }
  for (const auto& b : bad) std::cout << "check_measured: " << argv[1] << ": " << b << "\n";
  return bad.empty() ? 0 : 1;
}
