// Executor overhead: DDP-style bucketed allreduce of ResNet-50's gradients (25 MiB or 1 MiB
// buckets, fp32, sum) through redsim's executor, against calling Gloo's allreduce directly in a loop on
// the same bucket sizes. Ranks are threads of this process over TCP loopback, each with its
// own Gloo context; both modes use the same transport and the same reduction (sum of floats).
//
// For each repetition: raw = a barrier, then every bucket's gloo::allreduce back to back;
// executor = one step of the bucketed Plan with compute durations set to 0 (so the step is its
// allreduces, issued by the executor's stream thread as soon as their dependencies allow).
// Time of a step: from the earliest rank leaving the barrier to the latest rank finishing.
// Reported (median over repetitions): busbw of both, nccl-tests' definition
// (bytes x 2(N-1)/N / time), and their ratio exec/raw (the target is >= 0.9).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include "core/cluster.h"
#include "core/knobs.h"
#include "core/trace_json.h"
#include "realexec/clock.h"
#include "realexec/executor.h"
#include "realexec/gloo_backend.h"
#include "realexec/tcp_store.h"
#include "strategies/strategy.h"

using namespace redsim;
using namespace redsim::realexec;

namespace {

constexpr int kWarmup = 1;
constexpr int kReps = 8;

Plan bucketed_plan(int n, int bucket_mib) {
  ModelTrace trace = load_trace(std::string(REDSIM_SOURCE_DIR) + "/traces/resnet50.json");
  ClusterSpec cluster;
  cluster.name = "bench";
  cluster.devices_per_node = n;
  Knobs k;
  k.strategy = "bucketed";
  k.bucket_cap_bytes = static_cast<std::int64_t>(bucket_mib) * 1024 * 1024;
  k.reduce_op = ReduceOp::sum;
  k.broadcast_buffers = false;  // only the gradient buckets
  k.wire_dtype = DType::fp32;
  Plan p = make_strategy("bucketed")->plan(trace, cluster, k);
  for (auto& op : p.ops) op.duration_s = 0;  // communication only
  return p;
}

struct Times {
  std::vector<double> start, end;  // per repetition, this rank
  std::vector<double> lead;        // executor: from the step's origin to its first allreduce
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

// Per repetition: latest end minus earliest start over ranks.
std::vector<double> step_times(const std::vector<Times>& ranks) {
  std::vector<double> out;
  for (std::size_t rep = 0; rep < ranks[0].start.size(); ++rep) {
    double s = std::numeric_limits<double>::infinity(), e = 0;
    for (const auto& r : ranks) {
      s = std::min(s, r.start[rep]);
      e = std::max(e, r.end[rep]);
    }
    out.push_back(e - s);
  }
  return out;
}

// One allreduce per bucket on a raw Gloo context, between barriers.
void raw_gloo_step(const std::shared_ptr<gloo::rendezvous::Context>& ctx, std::vector<std::vector<float>>& bufs, bool timed,
                   Times& rt) {
  gloo::BarrierOptions b(ctx);
  gloo::barrier(b);
  const double t0 = now_s();
  for (auto& buf : bufs) {
    gloo::AllreduceOptions o(ctx);
    o.setOutput(buf.data(), buf.size());
    o.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
    gloo::allreduce(o);
  }
  if (timed) {
    rt.start.push_back(t0);
    rt.end.push_back(now_s());
  }
}

// One step of the plan through the executor; `lead` is its time before the first allreduce.
void executor_step(Executor& ex, const Plan& plan, int rep, bool timed, Times& et) {
  const StepRecord rec = ex.run_step(rep);
  double end = rec.origin_s;
  for (const auto& t : rec.ops) end = std::max(end, t.end_s);
  if (!timed) return;
  et.start.push_back(rec.origin_s);
  et.end.push_back(end);
  double first = end;
  for (const auto& op : plan.ops)
    if (op.kind == OpKind::allreduce) first = std::min(first, rec.ops[op.id].start_s);
  et.lead.push_back(first - rec.origin_s);
}

void bench_rank(int rank, int n, int port, const Plan& plan, const std::vector<std::int64_t>& bucket_elems, Times& rt,
                Times& et) {
  TcpStore store("127.0.0.1", port, std::chrono::seconds(60), std::chrono::seconds(60), "bench-secret");
  // Raw Gloo: its own context, as a user of Gloo would set one up.
  gloo::rendezvous::PrefixStore prefixed("bench/raw", store);
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto dev = gloo::transport::tcp::CreateDevice(attr);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, n);
  ctx->setTimeout(std::chrono::seconds(60));
  ctx->connectFullMesh(prefixed, dev);
  std::vector<std::vector<float>> bufs;
  for (auto e : bucket_elems) bufs.emplace_back(static_cast<std::size_t>(e), 1.0f);
  // The executor on its own contexts.
  auto backend = make_gloo_backend(store, rank, n, {"127.0.0.1", "", std::chrono::seconds(60)});
  Executor ex(plan, *backend, {});
  for (int rep = 0; rep < kWarmup + kReps; ++rep) {
    const bool timed = rep >= kWarmup;
    // Alternate which goes first, so neither always follows the other.
    if (rep % 2 == 0) {
      raw_gloo_step(ctx, bufs, timed, rt);
      executor_step(ex, plan, rep, timed, et);
    } else {
      executor_step(ex, plan, rep, timed, et);
      raw_gloo_step(ctx, bufs, timed, rt);
    }
  }
}

void BM_ExecutorVsRawGloo(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const Plan plan = bucketed_plan(n, static_cast<int>(state.range(1)));
  std::vector<std::int64_t> bucket_elems;
  std::int64_t total_bytes = 0;
  for (const auto& op : plan.ops)
    if (op.kind == OpKind::allreduce) {
      bucket_elems.push_back(op.bytes / 4);
      total_bytes += op.bytes;
    }
  const double bus = 2.0 * (n - 1) / n;
  double raw_busbw = 0, exec_busbw = 0;
  for (auto _ : state) {
    TcpStoreServer server(listen_tcp("127.0.0.1", 0), "bench-secret");
    std::vector<Times> raw(static_cast<std::size_t>(n)), exec(static_cast<std::size_t>(n));
    std::vector<std::thread> threads;
    for (int rank = 0; rank < n; ++rank)
      threads.emplace_back([&, rank] {
        bench_rank(rank, n, server.port(), plan, bucket_elems, raw[static_cast<std::size_t>(rank)],
                   exec[static_cast<std::size_t>(rank)]);
      });
    for (auto& t : threads) t.join();
    const double raw_s = median(step_times(raw));
    const double exec_s = median(step_times(exec));
    raw_busbw = static_cast<double>(total_bytes) * bus / raw_s / 1e9;
    exec_busbw = static_cast<double>(total_bytes) * bus / exec_s / 1e9;
    state.SetIterationTime(exec_s);
    state.counters["raw_step_ms"] = raw_s * 1e3;
    state.counters["exec_lead_ms"] = median(exec[0].lead) * 1e3;
  }
  state.counters["buckets"] = static_cast<double>(bucket_elems.size());
  state.counters["MB_per_rank"] = static_cast<double>(total_bytes) / 1e6;
  state.counters["raw_busbw_GBps"] = raw_busbw;
  state.counters["exec_busbw_GBps"] = exec_busbw;
  state.counters["exec_over_raw"] = exec_busbw / raw_busbw;
}

}  // namespace

// ranks x bucket cap (MiB): DDP's default 25 MiB, and 1 MiB buckets (many small collectives,
// where per-op overhead would show).
BENCHMARK(BM_ExecutorVsRawGloo)
    ->ArgNames({"ranks", "bucket_mib"})
    ->Args({2, 25})
    ->Args({4, 25})
    ->Args({2, 1})
    ->Args({4, 1})
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
