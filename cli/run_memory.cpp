#include "cli/run_memory.h"

#include <cmath>
#include <cstdio>
#include <string>

#include "core/plan_json.h"

namespace redsim::cli {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string row(const std::string& who, double params, double grads, double optimizer, double buffers, double total,
                const std::string& rss) {
  char line[200];
  std::snprintf(line, sizeof line, "  %-10s %10.3f %10.3f %10.3f %10.3f %10.3f %10s\n", who.c_str(), params / kGiB,
                grads / kGiB, optimizer / kGiB, buffers / kGiB, total / kGiB, rss.c_str());
  return line;
}

double as_double(std::int64_t bytes) { return static_cast<double>(bytes); }

}  // namespace

void print_run_memory(std::ostream& out, const realexec::RunOutcome& r) {
  const auto& m = r.plan.memory;  // the strategy's model at the traced sizes
  const double f = r.scale.factor;
  out << "  memory per rank (GiB) held by the executor: the model state it allocated and its collective buffers;\n"
      << "  peak RSS: the rank process's VmHWM; model: the strategy's memory model, most loaded rank\n";
  out << "  rank           params      grads  optimizer    buffers      total   peak RSS\n";
  out << row("model", as_double(m.params_bytes), as_double(m.grads_bytes), as_double(m.optimizer_bytes),
             as_double(m.comm_buffer_bytes), as_double(m.model_state_bytes()), "");
  bool state_scaled = f != 1.0;
  const auto& held = r.measured.held;
  for (std::size_t i = 0; i < held.size(); ++i) {
    if (held.size() > 16 && i == 8) {
      out << "  ... " << (held.size() - 12) << " more ranks (all in the result JSON) ...\n";
      i = held.size() - 4;
    }
    const auto& h = held[i];
    state_scaled = state_scaled || r.measured.state_scale[i] != 1.0;
    char rss[32];
    std::snprintf(rss, sizeof rss, "%.3f", static_cast<double>(r.measured.peak_rss_bytes[i]) / kGiB);
    out << row(std::to_string(i), static_cast<double>(h.params_bytes), static_cast<double>(h.grads_bytes),
               static_cast<double>(h.optimizer_bytes), static_cast<double>(h.buffer_bytes),
               static_cast<double>(h.total_bytes()), rss);
  }
  if (state_scaled) {
    out << "  scaled to fit this machine: buffers x" << f << ", model state x";
    for (std::size_t i = 0; i < held.size(); ++i) out << (i ? "," : "") << r.measured.state_scale[i];
    out << " (per rank); the model row is at the traced sizes\n";
  }
  // Buffers differ by design: the executor keeps one buffer per collective of the plan (each
  // result is verified after the step), where the model counts the buffers a framework reuses.
  out << "  (the executor holds a buffer for every collective of the step; the model counts what a framework "
         "keeps live)\n";
  // The executor runs no model, so the model's activations are beside the comparison, not in it.
  if (m.activations_known) {
    char act[160];
    std::snprintf(act, sizeof act, "  the model's activations, not held by the executor nor in the model row: %.3f GiB\n",
                  as_double(m.activation_bytes) / kGiB);
    out << act;
  }
  out << "\n";
}

nlohmann::json run_memory_json(const realexec::RunOutcome& r) {
  nlohmann::json ranks = nlohmann::json::array();
  for (std::size_t i = 0; i < r.measured.held.size(); ++i) {
    const auto& h = r.measured.held[i];
    ranks.push_back({{"rank", i},
                     {"params_bytes", h.params_bytes},
                     {"grads_bytes", h.grads_bytes},
                     {"optimizer_bytes", h.optimizer_bytes},
                     {"buffer_bytes", h.buffer_bytes},
                     {"total_bytes", h.total_bytes()},
                     {"peak_rss_bytes", r.measured.peak_rss_bytes[i]},
                     {"model_state_scale", r.measured.state_scale[i]}});
  }
  return {{"model", memory_to_json(r.plan.memory)},
          {"model_note", "the strategy's memory model at the traced sizes, most loaded rank (as redsim simulate)"},
          {"buffer_scale", r.scale.factor},
          {"ranks", ranks},
          {"held_note", "bytes each rank's executor allocated: parameters, gradients and Adam "
                        "state sized from the trace's tensors and the shards the plan's reduce-scatters, reduces "
                        "and allgathers give the rank under its ZeRO stage, times model_state_scale (1, or the largest 2^-k "
                        "at or below buffer_scale that fits beside the buffers); buffer_bytes: a buffer per "
                        "collective, at buffer_scale"},
          {"peak_rss_note", "VmHWM of the rank process (/proc/self/status), after its last step"}};
}

}  // namespace redsim::cli
