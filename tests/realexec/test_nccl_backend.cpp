// The NCCL backend on CUDA devices. Without a GPU it checks what it can (NCCL links and reports
// its version) and exits 77, which CTest shows as "Skipped" with the reason printed here.
// With GPUs: one rank per device (up to 4, threads of this process) runs every collective x
// reduce op x dtype against a host reference, then the executor runs a bucketed plan.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/trace_json.h"
#include "realexec/buffer_pattern.h"
#include "realexec/executor.h"
#include "realexec/nccl_backend.h"
#include "realexec/traffic.h"
#include "rank_threads.h"
#include "strategies/strategy.h"

using namespace redsim;
using namespace redsim::realexec;

namespace {

std::vector<std::string> collectives_on(int rank, int n, gloo::rendezvous::Store& st, int* cases) {
  std::vector<std::string> bad;
  auto backend = make_nccl_backend(st, rank, n, {rank, std::chrono::seconds(60)});
  auto comm = backend->make_communicator("test");
  const std::int64_t count = 4099;
  for (DType dt : {DType::fp32, DType::fp16, DType::bf16})
    for (OpKind kind : {OpKind::allreduce, OpKind::reduce, OpKind::broadcast, OpKind::reduce_scatter, OpKind::allgather})
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min, ReduceOp::prod})
        for (bool uneven : {false, true}) {
          if (uneven && kind != OpKind::reduce_scatter && kind != OpKind::allgather) continue;
          const std::string what = std::string(op_kind_name(kind)) + " " + std::string(reduce_op_name(op)) + " " +
                                   std::string(dtype_name(dt)) + (uneven ? " uneven" : "");
          std::vector<Segment> shards;
          std::int64_t total = count;
          if (kind == OpKind::reduce_scatter || kind == OpKind::allgather) {
            std::int64_t off = uneven ? 3 : 0;
            for (int r = 0; r < n; ++r) {
              const std::int64_t c = uneven ? (r == n - 1 && n > 1 ? 0 : 50 + 7 * r) : split_piece(count, n, r);
              shards.push_back({off, c});
              off += c;
            }
            total = off;
          }
          const int root = n - 1;
          ValuePattern p(kind, op, dt, n, root, 5);
          const auto bytes = static_cast<std::size_t>(total * dtype_size_bytes(dt));
          std::vector<char> host(bytes);
          p.fill(host.data(), total, rank, shards);
          void* dev = backend->allocate(bytes);
          backend->copy_to_buffer(dev, host.data(), bytes);
          switch (kind) {
            case OpKind::allreduce:
              comm->allreduce(dev, total, dt, op);
              break;
            case OpKind::reduce:
              comm->reduce(dev, total, dt, op, root);
              break;
            case OpKind::broadcast:
              comm->broadcast(dev, total, dt, root);
              break;
            case OpKind::reduce_scatter:
              comm->reduce_scatter(dev, shards, dt, op);
              break;
            default:
              comm->allgather(dev, shards, dt);
          }
          backend->copy_from_buffer(host.data(), dev, bytes);
          backend->release(dev, bytes);
          const double tol = op == ReduceOp::avg ? 2.0 * n * (dt == DType::fp32 ? 1.2e-7 : dt == DType::fp16 ? 1e-3 : 8e-3) : 0;
          if (auto why = p.check(host.data(), total, rank, shards, tol)) bad.push_back("rank " + std::to_string(rank) + ": " + what + ": " + *why);
          ++*cases;
        }
  return bad;
}

std::vector<std::string> executor_on(int rank, int n, gloo::rendezvous::Store& st, const Plan& plan) {
  std::vector<std::string> bad;
  auto backend = make_nccl_backend(st, rank, n, {rank, std::chrono::seconds(60)});
  Executor ex(plan, *backend, {});
  for (int s = 0; s < 3; ++s) {
    const auto rec = ex.run_step(s);
    for (const auto& op : plan.ops)
      if (rec.ops[op.id].end_s < rec.ops[op.id].start_s) bad.push_back("op " + op.name + " ends before it starts");
  }
  return bad;
}

}  // namespace

int main() {
  const int version = nccl_version_code();
  std::cout << "NCCL version code " << version << "\n";
  if (version < 21000) {
    std::cout << "FAILED: NCCL " << version << " is older than 2.10 (no ncclAvg)\n";
    return 1;
  }
  std::string why;
  const int devices = cuda_device_count(&why);
  if (devices <= 0) {
    std::cout << "SKIPPED: the NCCL backend is built and linked, but there is no CUDA device to test it on (" << why
              << ")\n";
    return 77;
  }
  const int n = std::min(devices, 4);
  std::cout << devices << " CUDA device(s): testing " << n << " NCCL rank(s)\n";
  std::vector<int> cases(static_cast<std::size_t>(n), 0);
  auto bad = testing::run_ranks(n, [&](int rank, gloo::rendezvous::Store& st) {
    return collectives_on(rank, n, st, &cases[static_cast<std::size_t>(rank)]);
  });

  const auto trace = load_trace(std::string(REDSIM_SOURCE_DIR) + "/tests/data/tiny_trace.json");
  ClusterSpec cluster;
  cluster.name = "gpus";
  cluster.devices_per_node = n;
  Knobs k;
  k.strategy = "bucketed";
  k.bucket_cap_bytes = 1 << 20;
  k.channels = 2;
  const Plan plan = make_strategy("bucketed")->plan(trace, cluster, k);
  auto bad2 = testing::run_ranks(n, [&](int rank, gloo::rendezvous::Store& st) { return executor_on(rank, n, st, plan); });
  bad.insert(bad.end(), bad2.begin(), bad2.end());

  for (const auto& b : bad) std::cout << "FAILED: " << b << "\n";
  std::cout << cases[0] << " collective cases per rank, executor: 3 bucketed steps\n";
  return bad.empty() ? 0 : 1;
}
