#include "strategies/comm_hooks.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace redsim {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

bool is_vector(const ModelTrace& trace, const TraceParam& p) {
  const auto& layer = trace.layers[p.layer].name;
  return ends_with(p.name, "bias") || layer.find("norm") != std::string::npos || layer.find("ln") != std::string::npos ||
         layer.find("bn") != std::string::npos;
}

PlanOp hook_kernel(const std::string& name, std::uint32_t stream, double bytes_moved, double mem_Bps,
                   std::vector<std::uint32_t> deps) {
  PlanOp op;
  op.kind = OpKind::backward;  // the hook runs inside DDP's backward
  op.name = name;
  op.stream = stream;
  op.duration_s = mem_Bps > 0 ? bytes_moved / mem_Bps : 0;
  op.deps = std::move(deps);
  return op;
}

PlanOp hook_allreduce(const Knobs& knobs, const std::string& name, std::uint32_t stream, DType dtype,
                      std::int64_t elems, int bucket, std::vector<std::uint32_t> deps) {
  PlanOp op;
  op.kind = OpKind::allreduce;
  op.name = name;
  op.stream = stream;
  op.dtype = dtype;
  op.bytes = elems * dtype_size_bytes(dtype);
  op.reduce_op = knobs.reduce_op;
  op.request = collective_request(knobs);
  op.bucket = bucket;
  op.deps = std::move(deps);
  return op;
}

DType half_of(const Knobs& knobs) { return knobs.comm_hook == CommHook::bf16 ? DType::bf16 : DType::fp16; }

// Bytes one cast of a bucket moves: read it, write the half-precision copy (or the reverse).
double cast_bytes(const Knobs& knobs, const GradBucket& b) {
  return static_cast<double>(b.numel) * (dtype_size_bytes(b.dtype) + dtype_size_bytes(half_of(knobs)));
}

// fp16/bf16_compress_hook: the cast to half (in the hook's call, ending at `ready`), allreduce,
// cast back (in the future's callback).
std::uint32_t add_cast_bucket(Plan& plan, const Knobs& knobs, const GradBucket& b, int i, std::uint32_t ready,
                              double mem_Bps) {
  const auto comm = plan.stream_index("comm0"), hook = plan.stream_index("comm_hook");
  const DType half = half_of(knobs);
  const double moved = cast_bytes(knobs, b);
  const std::string tag = "bucket" + std::to_string(i);
  auto ar = hook_allreduce(knobs, "allreduce:" + tag, comm, half, b.numel, i, {ready});
  ar.slices.clear();
  const auto ar_id = plan.add(std::move(ar));
  return plan.add(hook_kernel("hook:decompress:" + tag, hook, moved, mem_Bps, {ar_id}));
}

struct PowerSgdBucket {
  std::int64_t uncompressed_elems = 0, p_elems = 0, q_elems = 0, matrix_elems = 0, ortho_elems = 0;
};

PowerSgdBucket split_bucket(const ModelTrace& trace, const GradBucket& b, int r) {
  PowerSgdBucket s;
  for (auto p : b.params) {
    const auto m = powersgd_matrix(trace, p, r);
    if (!m.compressed) {
      s.uncompressed_elems += trace.params[p].numel;
      continue;
    }
    s.p_elems += m.rows * m.rank;
    s.q_elems += m.cols * m.rank;
    s.matrix_elems += m.rows * m.cols;
    s.ortho_elems += 2 * m.rows * m.rank * m.rank;  // Gram-Schmidt: each of r columns against the others
  }
  return s;
}

// Bytes of PowerSGD's work in the hook's call: error feedback and P = M Q (read M and the error,
// write M, read M).
double powersgd_call_bytes(const PowerSgdBucket& s) { return 4 * 4.0 * static_cast<double>(s.matrix_elems); }

// powerSGD_hook, one bucket, after its call (error feedback and P = M Q, ending at `ready`): the
// uncompressed tensors' allreduce; P allreduced; P orthogonalised and Q = M^T P (read M); Q
// allreduced; M = P Q^T and the new error (write M, read M, write the error). Kernels move fp32
// matrices; P and Q travel in fp32.
std::vector<std::uint32_t> add_powersgd_bucket(Plan& plan, const ModelTrace& trace, const Knobs& knobs,
                                               const GradBucket& b, int i, std::uint32_t ready, double mem_Bps) {
  const auto comm = plan.stream_index("comm0"), comm_q = plan.stream_index("comm1"), hook = plan.stream_index("comm_hook");
  const auto s = split_bucket(trace, b, knobs.powersgd_rank);
  const std::string tag = "bucket" + std::to_string(i);
  std::vector<std::uint32_t> done;
  if (s.uncompressed_elems > 0)
    done.push_back(plan.add(hook_allreduce(knobs, "allreduce:" + tag + ":uncompressed", comm, b.dtype,
                                           s.uncompressed_elems, i, {ready})));
  if (s.matrix_elems == 0) return done;
  const double mat = 4.0 * static_cast<double>(s.matrix_elems);
  const auto ar_p = plan.add(hook_allreduce(knobs, "allreduce:" + tag + ":p", comm, DType::fp32, s.p_elems, i, {ready}));
  const auto q = plan.add(hook_kernel("hook:powersgd:q:" + tag, hook, mat + 4.0 * s.ortho_elems, mem_Bps, {ar_p}));
  const auto ar_q = plan.add(hook_allreduce(knobs, "allreduce:" + tag + ":q", comm_q, DType::fp32, s.q_elems, i, {q}));
  done.push_back(plan.add(hook_kernel("hook:powersgd:decompress:" + tag, hook, 3 * mat, mem_Bps, {ar_q})));
  return done;
}

}  // namespace

GradMatrix powersgd_matrix(const ModelTrace& trace, std::size_t param, int rank) {
  const auto& p = trace.params[param];
  GradMatrix m;
  if (p.shape) {
    // powerSGD_hook: matrix = tensor.view(tensor.shape[0], -1), rank min(n, m, r), compressed when
    // (n + m) * rank * min_compression_rate (2) < n * m. A 1-D tensor is n x 1 and never
    // compressed; a 0-dim one cannot be viewed so and is left uncompressed here.
    if (p.shape->empty()) return m;
    m.rows = p.shape->front();
    m.cols = p.numel / m.rows;
  } else {
    if (is_vector(trace, p)) return m;
    auto rows = static_cast<std::int64_t>(std::sqrt(static_cast<double>(p.numel)));
    while (rows > 1 && p.numel % rows != 0) --rows;
    m.rows = rows;
    m.cols = p.numel / rows;
  }
  m.rank = static_cast<int>(std::min<std::int64_t>({m.rows, m.cols, rank}));
  m.compressed = (m.rows + m.cols) * m.rank * 2 < m.rows * m.cols;
  return m;
}

std::vector<std::uint32_t> add_hooked_buckets(Plan& plan, const ModelTrace& trace, const ClusterSpec& cluster,
                                              const Knobs& knobs, const std::vector<GradBucket>& buckets,
                                              const ComputePass& pass) {
  // The futures' callbacks get their own stream: they run as the buckets' allreduces complete,
  // beside backward, sharing the device with it as any two kernels of a rank do.
  const double mem_Bps = kernel_memory_Bps(cluster);
  std::vector<std::uint32_t> done;
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    // The bucket is ready when the hook's call has run (add_compute_pass, hook_call_s).
    const auto ready = pass.bucket_ready_ops.at(b);
    const int i = static_cast<int>(b);
    if (knobs.comm_hook == CommHook::powersgd) {
      auto d = add_powersgd_bucket(plan, trace, knobs, buckets[b], i, ready, mem_Bps);
      done.insert(done.end(), d.begin(), d.end());
    } else {
      done.push_back(add_cast_bucket(plan, knobs, buckets[b], i, ready, mem_Bps));
    }
  }
  return done;
}

std::vector<double> hook_call_s(const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& knobs,
                                const std::vector<GradBucket>& buckets) {
  std::vector<double> s(buckets.size(), 0.0);
  const double mem_Bps = kernel_memory_Bps(cluster);
  if (knobs.comm_hook == CommHook::none || !(mem_Bps > 0)) return s;
  for (std::size_t b = 0; b < buckets.size(); ++b)
    s[b] = (knobs.comm_hook == CommHook::powersgd
                ? powersgd_call_bytes(split_bucket(trace, buckets[b], knobs.powersgd_rank))
                : cast_bytes(knobs, buckets[b])) /
           mem_Bps;
  return s;
}

std::int64_t hook_memory_bytes(const ModelTrace& trace, const Knobs& knobs, const std::vector<GradBucket>& buckets) {
  std::int64_t bytes = 0;
  for (const auto& b : buckets) {
    if (knobs.comm_hook == CommHook::fp16 || knobs.comm_hook == CommHook::bf16) {
      bytes += b.numel * 2;
      continue;
    }
    const auto s = split_bucket(trace, b, knobs.powersgd_rank);
    if (s.matrix_elems > 0) bytes += b.numel * 4 + (s.p_elems + s.q_elems) * 4;
  }
  return bytes;
}

std::int64_t hook_step_buffer_bytes(const ModelTrace& trace, const Knobs& knobs, const std::vector<GradBucket>& buckets) {
  if (knobs.comm_hook != CommHook::powersgd) return 0;
  std::int64_t clones = 0, largest = 0;
  for (const auto& b : buckets) {
    if (split_bucket(trace, b, knobs.powersgd_rank).matrix_elems <= 0) continue;
    clones += b.numel * 4;
    largest = std::max(largest, b.numel * 4);
  }
  return clones + largest;
}

}  // namespace redsim
