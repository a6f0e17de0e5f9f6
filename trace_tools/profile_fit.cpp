#include "trace_tools/profile_fit.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>

#include "core/error.h"
#include "core/json_in.h"
#include "core/statistics.h"
#include "trace_tools/kernel_overlap.h"
#include "trace_tools/kineto_events.h"
#include "trace_tools/kineto_import.h"
#include "trace_tools/kineto_steps.h"

namespace redsim {

bool CollectiveQuery::operator<(const CollectiveQuery& o) const {
  return std::tie(kind, bytes, dtype, world) < std::tie(o.kind, o.bytes, o.dtype, o.world);
}

namespace {

using kineto::Kernel;

struct ComputeObs {
  std::string key;
  double dur_us, phi;
};
struct CommObs {
  CollectiveQuery query;
  double dur_us, phi;
};
struct BucketGap {
  double gap_us;
  std::int64_t bytes;
};
// After a step's last gradient allreduce and backward kernel, until the optimizer's time begins:
// DDP copying each of `tensors` gradients back out of its bucket (`bytes` in all).
struct CopyOutTail {
  double gap_us;
  std::int64_t tensors, bytes;
};
struct Observations {
  std::vector<ComputeObs> compute;
  std::vector<CommObs> comm;
  std::vector<BucketGap> gaps;
  std::vector<CopyOutTail> tails;
  std::vector<double> nccl_blocks;  // each NCCL kernel's grid, where the profile gives it
};

std::optional<OpKind> kind_of(const std::string& collective) {
  if (collective == "allreduce") return OpKind::allreduce;
  if (collective == "broadcast") return OpKind::broadcast;
  if (collective == "reducescatter") return OpKind::reduce_scatter;
  if (collective == "allgather") return OpKind::allgather;
  if (collective == "reduce") return OpKind::reduce;
  return std::nullopt;  // point-to-point and all-to-all: not modelled as collectives
}

// An NCCL kernel's message in bytes: its elements in its dtype (fp32 where the profile does not
// say); 0 where the size is unknown.
std::int64_t message_bytes(const Kernel& k) {
  return k.numel ? *k.numel * dtype_size_bytes(k.dtype.dtype.value_or(DType::fp32)) : 0;
}

// The same kernel is the same code on the same launch shape.
std::string kernel_key(const Kernel& k) {
  std::string key = k.span->name;
  if (k.span->args && k.span->args->is_object())
    for (const char* member : {"grid", "block"})
      if (auto it = k.span->args->find(member); it != k.span->args->end()) key += "|" + it->dump();
  return key;
}

// The profile's distributedInfo.world_size (0 when absent), which must fit on the cluster: the
// collectives are simulated on as many of its ranks.
int world_of(const nlohmann::json& root, const std::string& file, std::int64_t cluster_ranks) {
  if (!root.is_object()) return 0;
  auto info = root.find("distributedInfo");
  if (info == root.end() || !info->is_object()) return 0;
  auto ws = info->find("world_size");
  if (ws == info->end() || !ws->is_number_integer()) return 0;
  const auto world = ws->get<std::int64_t>();
  if (world > cluster_ranks)
    throw InputError(file, "$.distributedInfo.world_size",
                     "expected a world size the cluster holds (at most its " + std::to_string(cluster_ranks) + " ranks), got " +
                         std::to_string(world));
  return world > 0 ? static_cast<int>(world) : 0;
}

// A kernel's group must fit on the cluster too.
void check_group(const kineto::KinetoEvents& ev, const kineto::Kernel& k, std::int64_t cluster_ranks) {
  if (k.group_size <= cluster_ranks) return;
  throw InputError(ev.file, ev.events_path + "[" + std::to_string(k.span->event) + "].args.Group size",
                   "expected a group the cluster holds (at most its " + std::to_string(cluster_ranks) + " ranks), got " +
                       std::to_string(k.group_size));
}

// Each kernel's overlap with the other kind on its own device.
void observe_kernels(const kineto::KinetoEvents& ev, int world, std::int64_t cluster_ranks, Observations& obs,
                     ProfileFit& fit) {
  const auto nccl = kineto::busy_by_device(ev, true), compute = kineto::busy_by_device(ev, false);
  std::size_t unsized = 0;
  for (const auto& k : ev.kernels) {
    if (!(k.span->dur > 0)) continue;
    const double phi = kineto::overlap_fraction(k, k.nccl ? compute : nccl);
    if (!k.nccl) {
      obs.compute.push_back({kernel_key(k), k.span->dur, phi});
      fit.compute_kernels += 1;
      continue;
    }
    fit.nccl_kernels += 1;
    if (const int b = kineto::grid_blocks(k); b > 0) obs.nccl_blocks.push_back(b);
    check_group(ev, k, cluster_ranks);
    const auto kind = kind_of(k.collective);
    const int group = k.group_size > 0 ? k.group_size : world;
    if (!kind || !k.numel || *k.numel <= 0 || group < 2) {
      unsized += 1;
      continue;
    }
    const DType dt = k.dtype.dtype.value_or(DType::fp32);
    obs.comm.push_back({{*kind, message_bytes(k), dt, group}, k.span->dur, phi});
  }
  if (unsized > 0)
    kineto::warn_once(fit.warnings, ev.file + ": " + std::to_string(unsized) +
                                        " NCCL kernels without a message size, a known collective or a group of "
                                        "2+ ranks are left out of the collective fit");
}

// A step whose host copied gradients back out of DDP's buckets (copy_bucket_to_grad ops) and then
// ran an optimizer: the time between, per tensor the step accumulated.
void observe_tail(const kineto::StepResult& step, Observations& obs) {
  if (step.copied_out <= 0 || step.grad_tensors <= 0 || !(step.opt_end > step.opt_start)) return;
  double comm_end = step.bwd_end;
  std::int64_t bytes = 0;
  for (const auto& b : step.buckets) {
    comm_end = std::max(comm_end, b.kernel->end());
    bytes += message_bytes(*b.kernel);
  }
  obs.tails.push_back({std::max(0.0, step.opt_start - comm_end), step.grad_tensors, bytes});
}

// Per bucket: from its gradients being ready to its allreduce kernel starting, unless the
// communication stream was still busy with the previous collective then.
void observe_buckets(const kineto::KinetoEvents& ev, Observations& obs, ProfileFit& fit) {
  for (const auto& w : kineto::choose_steps(ev, std::nullopt, fit.warnings)) {
    kineto::StepResult step;
    try {
      step = kineto::reconstruct_step(ev, w, fit.warnings);
    } catch (const InputError& e) {
      kineto::warn_once(fit.warnings, std::string("no bucket gaps from a step: ") + e.what());
      continue;
    }
    fit.steps += 1;
    observe_tail(step, obs);
    for (const auto& b : step.buckets) {
      fit.buckets += 1;
      double busy_until = -1e300;
      for (const auto& k : ev.kernels)
        if (k.nccl && &k != b.kernel && k.span->pid == b.kernel->span->pid && k.span->tid == b.kernel->span->tid &&
            k.ts() < b.kernel->ts())
          busy_until = std::max(busy_until, k.end());
      if (busy_until > b.ready) continue;  // queued behind another collective
      obs.gaps.push_back({b.kernel->ts() - b.ready, message_bytes(*b.kernel)});
    }
  }
}

void observe_file(const std::string& file, std::int64_t cluster_ranks, Observations& obs, ProfileFit& fit) {
  const auto root = JsonIn::parse_text(read_text_file_maybe_gzip(file), file);
  kineto::KinetoEvents ev;
  kineto::read_kineto_events(root, file, ev);
  fit.files += 1;
  observe_kernels(ev, world_of(root, file, cluster_ranks), cluster_ranks, obs, fit);
  observe_buckets(ev, obs, fit);
}

// The median of the estimates, clamped to [lo, hi], with its quartiles; unfitted without any.
ProfileParam summarise(std::string name, double before, const std::vector<double>& est, double lo, double hi,
                      const std::string& none) {
  ProfileParam p{std::move(name), before, before, false, static_cast<int>(est.size()), 0, 0, none};
  if (est.empty()) return p;
  p.fitted = true;
  p.note.clear();
  const double m = quantile(est, 0.5);
  p.q1 = quantile(est, 0.25);
  p.q3 = quantile(est, 0.75);
  char buf[256];
  if (m > hi) {  // not a slowdown any device shows: the evidence, or the model bridging sizes, is off
    std::snprintf(buf, sizeof buf, "the estimate %.4g is above %g, which no device explains: kept as given", m, hi);
    p.fitted = false;
    p.note = buf;
    return p;
  }
  p.after = std::max(m, lo);
  if (p.after != m) {
    std::snprintf(buf, sizeof buf, "measured %.4g, below %g (no slowdown; noise): %g written", m, lo, p.after);
    p.note = buf;
  }
  return p;
}

// s = phi / (d0 / d - 1 + phi): the slowdown that makes the overlapped part of d account for it.
std::optional<double> slowdown(double alone_us, double dur_us, double phi) {
  const double denom = alone_us / dur_us - 1 + phi;
  if (!(denom > 0)) return std::nullopt;  // slower than any finite slowdown explains: noise
  return phi / denom;
}

ProfileParam fit_compute(const Observations& obs, double before) {
  std::map<std::string, std::vector<double>> alone;
  for (const auto& c : obs.compute)
    if (c.phi <= kAloneMaxOverlap) alone[c.key].push_back(c.dur_us);
  std::vector<double> est;
  for (const auto& c : obs.compute) {
    auto it = alone.find(c.key);
    if (c.phi < kBesideMinOverlap || it == alone.end()) continue;
    if (auto s = slowdown(quantile(it->second, 0.5), c.dur_us, c.phi)) est.push_back(*s);
  }
  return summarise("$.interference.compute_slowdown", before, est, 1.0, 10.0,
                   "no compute kernel ran both alone and beside an NCCL kernel (same name, grid and block)");
}

ProfileParam fit_collective(const Observations& obs, const AlonePredictor& alone, double before) {
  std::vector<CollectiveQuery> queries;
  for (const auto& c : obs.comm) queries.push_back(c.query);
  std::sort(queries.begin(), queries.end());
  queries.erase(std::unique(queries.begin(), queries.end(),
                            [](const CollectiveQuery& a, const CollectiveQuery& b) { return !(a < b) && !(b < a); }),
                queries.end());
  const std::vector<double> predicted = queries.empty() ? std::vector<double>{} : alone(queries);
  auto model_us = [&](const CollectiveQuery& q) {
    return predicted[static_cast<std::size_t>(std::lower_bound(queries.begin(), queries.end(), q) - queries.begin())];
  };
  // A collective's time alone: measured for the same size where one ran alone; else the model's
  // time scaled by the model's error on the collectives that ran alone.
  std::vector<double> alone_ratio;
  std::map<CollectiveQuery, std::vector<double>> alone_same;
  for (const auto& c : obs.comm)
    if (c.phi <= kAloneMaxOverlap) {
      alone_ratio.push_back(c.dur_us / model_us(c.query));
      alone_same[c.query].push_back(c.dur_us);
    }
  std::vector<double> est;
  if (!alone_ratio.empty()) {
    const double ratio = quantile(alone_ratio, 0.5);
    for (const auto& c : obs.comm) {
      if (c.phi < kBesideMinOverlap) continue;
      const auto same = alone_same.find(c.query);
      const double a_us = same != alone_same.end() ? quantile(same->second, 0.5) : model_us(c.query) * ratio;
      if (auto s = slowdown(a_us, c.dur_us, c.phi)) est.push_back(*s);
    }
  }
  // Bridged by the model, an estimate above 10 says the model's size law does not fit these kernels.
  return summarise("$.interference.collective_slowdown", before, est, 1.0, 10.0,
                   alone_ratio.empty() ? "no NCCL kernel of known size ran alone (without compute beside it)"
                                       : "no NCCL kernel of known size ran beside compute for half its time or more");
}

ProfileParam fit_overhead(const Observations& obs, const ClusterSpec& c) {
  std::vector<double> est;
  for (const auto& g : obs.gaps) {
    double us = g.gap_us - c.launch_us(OpKind::allreduce);
    // Copying the gradients into the bucket reads and writes its bytes.
    if (c.framework.bucket_copy) us -= 2.0 * static_cast<double>(g.bytes) / (c.bucket_copy_GBps() * 1e3);
    est.push_back(us);
  }
  return summarise("$.framework.bucket_overhead_us", c.framework.bucket_overhead_us, est, 0.0, 1e6,
                   "no gradient bucket whose allreduce started with its stream free");
}

ProfileParam fit_copy_out(const Observations& obs, const ClusterSpec& c) {
  std::vector<double> est;
  for (const auto& t : obs.tails) {
    double us = t.gap_us;
    // The copies' bytes, read and written, at the bandwidth bucket_copy prices them at.
    if (c.framework.bucket_copy) us -= 2.0 * static_cast<double>(t.bytes) / (c.bucket_copy_GBps() * 1e3);
    est.push_back(us / static_cast<double>(t.tensors));
  }
  return summarise("$.framework.copy_out_us_per_tensor", c.framework.copy_out_us_per_tensor, est, 0.0, 1e4,
                   "no step copied gradients back out of DDP's buckets before an optimizer (copy_bucket_to_grad "
                   "and AccumulateGrad host ops; none with gradient_as_bucket_view=True)");
}

// The rule's figure for the profile's median NCCL grid on the cluster's SMs.
std::string sm_share_note(int sm_count, const std::vector<double>& blocks) {
  if (blocks.empty() || sm_count <= 0) return "replaces the cluster's SM-share rule (the profile's NCCL kernels give no grid)";
  const double b = quantile(blocks, 0.5);
  char buf[200];
  std::snprintf(buf, sizeof buf, "replaces the cluster's SM-share rule: %d SMs / (%d - %.0f blocks, the profile's median NCCL grid) = %.4g",
                sm_count, sm_count, b, 1.0 / (1.0 - sm_share_taken(b, sm_count)));
  return buf;
}

}  // namespace

ProfileFit fit_profiles(const ClusterSpec& base, const std::vector<std::string>& files, const AlonePredictor& alone) {
  ProfileFit fit;
  Observations obs;
  const std::int64_t ranks = static_cast<std::int64_t>(base.nodes) * base.devices_per_node;
  for (const auto& f : files) observe_file(f, ranks, obs, fit);
  fit.params.push_back(fit_compute(obs, base.interference.compute_slowdown));
  fit.params.push_back(fit_collective(obs, alone, base.interference.collective_slowdown));
  fit.params.push_back(fit_overhead(obs, base));
  fit.params.push_back(fit_copy_out(obs, base));
  fit.cluster = base;
  fit.cluster.interference.compute_slowdown = fit.params[0].after;
  // A measured slowdown replaces the presets' SM-share rule; say what the rule would have given.
  if (base.interference.compute_slowdown_sm_share && fit.params[0].fitted) {
    fit.cluster.interference.compute_slowdown_sm_share = false;
    fit.params[0].note = sm_share_note(base.device.sm_count, obs.nccl_blocks);
  }
  fit.cluster.interference.collective_slowdown = fit.params[1].after;
  fit.cluster.framework.bucket_overhead_us = fit.params[2].after;
  fit.cluster.framework.copy_out_us_per_tensor = fit.params[3].after;
  return fit;
}

}  // namespace redsim
