// The measured Timeline of an imported profiler trace: the bucketed Plan of the imported trace,
// op by op, timed from what the profiler saw (kineto_import.h, imported_timeline).
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "trace_tools/kineto_import.h"
#include "trace_tools/kineto_names.h"

namespace redsim {

namespace {

using kineto::starts_with;

std::optional<std::size_t> parse_index(std::string_view s) {
  if (s.empty() || s.size() > 9 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return static_cast<std::size_t>(std::stoul(std::string(s)));
}

std::size_t bucket_of(const PlanOp& op, std::string_view digits, const KinetoImport& imp) {
  const auto k = parse_index(digits);
  if (!k || *k >= imp.buckets.size()) throw std::invalid_argument("imported_timeline: unknown op " + op.name);
  return *k;
}

void set(OpTiming& t, double start, double end) {
  t.ready_s = start;
  t.start_s = start;
  t.end_s = end;
}

// A resolved backward layer's measured span (trace import --params-from), by its op's name.
const KinetoImport::Span* resolved_span(const KinetoImport& imp, std::string_view name) {
  if (!starts_with(name, "bwd:")) return nullptr;
  for (const auto& s : imp.resolved_spans)
    if (name.substr(4) == s.layer) return &s;
  return nullptr;
}

// Compute ops: the forward pass, the backward intervals between buckets (or the resolved
// layers in them), the optimizer.
bool time_compute_op(const PlanOp& op, const KinetoImport& imp, OpTiming& t) {
  const std::string_view name = op.name;
  if (const auto* span = resolved_span(imp, name)) {
    set(t, span->start_s, span->end_s);
  } else if (name == "fwd:forward_pass") {
    set(t, imp.forward_start_s, imp.forward_end_s);
  } else if (starts_with(name, "fwd:")) {
    set(t, imp.forward_end_s, imp.forward_end_s);
  } else if (name == "bwd:backward_tail") {
    set(t, imp.buckets.back().ready_s, imp.backward_end_s);
  } else if (name == "bwd:forward_pass") {
    set(t, imp.backward_end_s, imp.backward_end_s);
  } else if (starts_with(name, "bwd:interval")) {
    const std::size_t k = bucket_of(op, name.substr(12), imp);
    set(t, imp.interval_start_s(k), imp.buckets[k].ready_s);
  } else if (name == "optimizer") {
    set(t, imp.optimizer_start_s, imp.optimizer_end_s);
  } else {
    return false;
  }
  return true;
}

void time_allreduce(const PlanOp& op, const Plan& plan, const KinetoImport& imp, OpTiming& t, double& comm_free) {
  const auto& b = imp.buckets[bucket_of(op, std::string_view(op.name).substr(16), imp)];
  t.ready_s = std::max(b.ready_s, comm_free);
  t.start_s = b.start_s;
  t.end_s = b.end_s;
  comm_free = b.end_s;
  // Per rank, a ring allreduce sends and receives 2(n-1)/n of the buffer: nccl-tests' bus bytes.
  const int n = plan.world_size;
  if (imp.sizes_known && n > 1) {
    const auto bus = static_cast<std::int64_t>(std::llround(2.0 * (n - 1) / n * static_cast<double>(op.bytes)));
    t.bytes_sent = bus;
    t.bytes_received = bus;
  }
}

// Measured forward broadcasts (DDP's buffer sync), by dtype, consumed in order by the plan's
// broadcast ops until their bytes add up.
struct Broadcasts {
  std::map<DType, std::vector<const ImportedCollective*>> list;
  std::map<DType, std::size_t> next;
};

void time_broadcast(const PlanOp& op, const Plan& plan, const KinetoImport& imp, Broadcasts& bc, OpTiming& t,
                    double& comm_free) {
  auto& list = bc.list[op.dtype];
  auto& next = bc.next[op.dtype];
  std::int64_t bytes = 0;
  double start = 0, end = 0;
  for (bool first = true; bytes < op.bytes && next < list.size(); first = false) {
    const auto* c = list[next++];
    bytes += c->numel * dtype_size_bytes(c->dtype);
    if (first) start = c->start_s;
    end = c->end_s;
  }
  if (bytes != op.bytes)
    throw std::invalid_argument("imported_timeline: the measured broadcasts do not make up " + op.name);
  t.ready_s = std::max(start, comm_free);
  t.start_s = start;
  t.end_s = end;
  comm_free = end;
  // NCCL's broadcast pipelines the buffer along the ring from the root (ranks in order): every
  // rank but the root receives it, every rank but the root's predecessor passes it on.
  const int n = plan.world_size, root = std::max(0, op.root);
  if (n > 1) {
    t.bytes_received = imp.rank == root ? 0 : op.bytes;
    t.bytes_sent = imp.rank == (root + n - 1) % n ? 0 : op.bytes;
  }
}

}  // namespace

Timeline imported_timeline(const Plan& plan, const KinetoImport& imp) {
  Timeline tl("measured", 1, plan.ops.size());
  Broadcasts broadcasts;
  for (const auto& c : imp.other_collectives)
    if (c.phase == "forward" && c.collective == "broadcast" && c.numel > 0) broadcasts.list[c.dtype].push_back(&c);
  double comm_free = 0;
  for (const auto& op : plan.ops) {
    auto& t = tl.mutable_at(0, op.id);
    if (time_compute_op(op, imp, t)) continue;
    if (starts_with(op.name, "allreduce:bucket"))
      time_allreduce(op, plan, imp, t, comm_free);
    else if (op.kind == OpKind::broadcast && starts_with(op.name, "broadcast:buffers:"))
      time_broadcast(op, plan, imp, broadcasts, t, comm_free);
    else
      throw std::invalid_argument("imported_timeline: unknown op " + op.name);
  }
  return tl;
}

}  // namespace redsim
