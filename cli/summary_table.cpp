#include "cli/summary_table.h"

#include <functional>

#include <cstdio>
#include <string>

#include "cli/text_format.h"
#include "core/units.h"

namespace redsim::cli {

void print_elided(std::ostream& out, std::size_t n, const std::function<void(std::size_t)>& row) {
  for (std::size_t i = 0; i < n; ++i) {
    if (n > 24 && i == 12) {
      out << "  ... " << (n - 20) << " more (all in the result JSON) ...\n";
      i = n - 8;
    }
    row(i);
  }
}

std::string collective_choice_text(const PlanOp& op) {
  std::string s(algorithm_name(op.algorithm));
  if (op.protocol) s += "/" + std::string(protocol_name(*op.protocol));
  return s + " x" + std::to_string(op.channels);
}

void print_summary(std::ostream& out, const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& knobs,
                   const Plan& plan, const StepSummary& s) {
  out << "redsim simulate: " << plan.strategy << " | " << trace.model << " (" << trace.param_count()
      << " params, " << human_bytes(static_cast<double>(trace.reduced_bytes())) << " of gradients, batch "
      << trace.batch_size_per_rank << " per rank) on " << cluster.name
      << " (" << cluster.nodes << " x " << cluster.devices_per_node << " = " << cluster.world_size() << " ranks)\n";
  out << "knobs: bucket " << human_bytes(static_cast<double>(knobs.bucket_cap_bytes)) << ", first bucket "
      << human_bytes(static_cast<double>(knobs.first_bucket_cap_bytes)) << ", order " << bucket_order_name(knobs.bucket_order)
      << ", algorithm " << (knobs.algorithm ? algorithm_name(*knobs.algorithm) : "auto") << ", protocol "
      << (knobs.protocol ? protocol_name(*knobs.protocol) : "auto") << ", channels "
      << (knobs.channels > 0 ? std::to_string(knobs.channels) : std::string("auto")) << ", wire "
      << (knobs.wire_dtype ? std::string(dtype_name(*knobs.wire_dtype)) : std::string("param dtype")) << ", reduce "
      << reduce_op_name(knobs.reduce_op);
  if (plan.strategy == "zero") out << ", ZeRO stage " << knobs.zero_stage << " (" << zero_impl_name(knobs.zero_impl) << ")";
  if (plan.strategy == "bucketed" && knobs.comm_hook != CommHook::none) {
    out << ", comm hook " << comm_hook_name(knobs.comm_hook);
    if (knobs.comm_hook == CommHook::powersgd) {
      // PowerSGD's matrices come from the parameters' shapes; say when the trace lacks some.
      std::size_t reduced = 0, shaped = 0;
      for (const auto& p : trace.params)
        if (p.reduced()) ++reduced, shaped += p.shape ? 1 : 0;
      out << " rank " << knobs.powersgd_rank;
      if (shaped < reduced)
        out << " (" << reduced - shaped << " of " << reduced
            << " parameters without a shape in the trace: their matrices are guessed, the most square)";
    }
  }
  if (knobs.activation_checkpointing == ActivationCheckpointing::blocks) {
    std::size_t blocks = 0;
    for (const auto& op : plan.ops) blocks += op.name.rfind("recompute:", 0) == 0 ? 1 : 0;
    out << ", activation checkpointing: " << blocks << " block recomputes a step";
  }
  out << "\n\n";
  out << "  step time            " << ms(s.step_time_s) << "\n";
  out << "  compute time         " << ms(s.compute_time_s) << "\n";
  if (s.compute_stretched_s > 0) {
    const auto& in = cluster.interference;
    const std::string why = in.compute_slowdown_sm_share
                                ? "beside collectives, the SM-share rule on " + std::to_string(cluster.device.sm_count) + " SMs"
                            : in.compute_slowdown != 1.0 ? "beside collectives, compute_slowdown " + fmt("%.4g", in.compute_slowdown)
                                                         : std::string("sharing the device");
    out << "  compute stretched    " << ms(s.compute_stretched_s) << "  (" << why << ")\n";
  }
  out << "  comm time (busy)     " << ms(s.comm_time_s) << "\n";
  out << "  exposed comm         " << ms(s.exposed_comm_s) << fmt("  (%.1f%% of the step)", s.step_time_s > 0 ? 100.0 * s.exposed_comm_s / s.step_time_s : 0.0) << "\n";
  out << "  time per sample      " << fmt("%.3f us", s.time_per_sample_s * 1e6) << "  (global batch "
      << plan.samples_per_step << ")\n";
  out << "  bytes sent per rank  " << human_bytes(static_cast<double>(s.bytes_sent_per_rank)) << "\n";
  const auto& m = plan.memory;
  // Memory is in GiB everywhere (simulate, tune), so figures compare across subcommands.
  out << "  memory per rank      " << gib(m.total_bytes()) << " GiB  (params " << gib(m.params_bytes) << ", grads "
      << gib(m.grads_bytes) << ", optimizer " << gib(m.optimizer_bytes) << ", comm buffers " << gib(m.comm_buffer_bytes)
      << (m.activations_known ? ", activations " + gib(m.activation_bytes) + " GiB" : " GiB; activations not in the trace")
      // The step's buffers come after backward has freed the activations: the larger one counts.
      << (m.step_buffer_bytes > 0 ? "; step buffers after backward " + gib(m.step_buffer_bytes) + " GiB, the larger of the two counts" : "")
      << ")\n";
  if (const auto device = cluster.device_memory_bytes(); device > 0 && m.total_bytes() > device)
    out << "  does not fit         " << gib(m.total_bytes()) << " GiB per rank over the device's " << gib(device)
        << " GiB (" << fmt("%g", cluster.device.memory_GB) << " GB): tune excludes such settings; activation checkpointing, "
        << "zero or fsdp, or a smaller --batch-size hold less\n";
  out << "\n";

  out << "  collective                 tensors        bytes  algorithm              start ms      end ms   busbw GB/s\n";
  print_elided(out, s.collectives.size(), [&](std::size_t i) {
    const auto& c = s.collectives[i];
    char line[240];
    std::snprintf(line, sizeof line, "  %-24.24s %9zu %12s  %-20.20s %11.3f %11.3f %12.2f\n", plan.ops[c.op].name.c_str(),
                  c.tensors, human_bytes(static_cast<double>(c.bytes)).c_str(), collective_choice_text(plan.ops[c.op]).c_str(),
                  c.start_s * 1e3, c.end_s * 1e3, c.busbw_GBps);
    out << line;
  });
}

void print_comparison(std::ostream& out, const ModelTrace& trace, const ClusterSpec& cluster,
                      const std::vector<StrategyRow>& rows) {
  out << "redsim simulate: all strategies | " << trace.model << " on " << cluster.name << " (" << cluster.world_size()
      << " ranks); times per training step\n\n";
  out << "  strategy      step ms   sample us  exposed ms   sent/rank params GiB  grads GiB  optim GiB  memory/rank GiB\n";
  const auto device = cluster.device_memory_bytes();
  bool over = false;
  for (const auto& r : rows) {
    const auto& m = r.plan->memory;
    const bool row_over = device > 0 && m.total_bytes() > device;
    char line[256];
    std::snprintf(line, sizeof line, "  %-11s %9.3f %11.3f %11.3f %11s %10s %10s %10s %16s%s\n", r.strategy.c_str(),
                  r.summary.step_time_s * 1e3, r.summary.time_per_sample_s * 1e6, r.summary.exposed_comm_s * 1e3,
                  human_bytes(static_cast<double>(r.summary.bytes_sent_per_rank) / r.plan->steps).c_str(),
                  gib(m.params_bytes).c_str(), gib(m.grads_bytes).c_str(), gib(m.optimizer_bytes).c_str(),
                  gib(m.total_bytes()).c_str(), row_over ? " over" : "");
    out << line;
    over = over || row_over;
  }
  if (over)
    out << "  over: the memory per rank exceeds the device's " << gib(device)
        << " GiB and does not fit (tune excludes such settings)\n";
}

}  // namespace redsim::cli
