#include "realexec/microbench.h"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>

#include "core/step_summary.h"
#include "realexec/backend.h"
#include "realexec/clock.h"
#include "realexec/rank_runner.h"
#include "realexec/tcp_store.h"

namespace redsim::realexec {

namespace {

Traffic run_once(Communicator& c, OpKind kind, void* buf, std::int64_t count, int world) {
  switch (kind) {
    case OpKind::allreduce:
      return c.allreduce(buf, count, DType::fp32, ReduceOp::sum);
    case OpKind::reduce:
      return c.reduce(buf, count, DType::fp32, ReduceOp::sum, 0);
    case OpKind::broadcast:
      return c.broadcast(buf, count, DType::fp32, 0);
    case OpKind::reduce_scatter:
    case OpKind::allgather: {
      std::vector<Segment> shards(static_cast<std::size_t>(world));
      const std::int64_t per = count / world;
      for (int r = 0; r < world; ++r) shards[static_cast<std::size_t>(r)] = {r * per, per};
      return kind == OpKind::allgather ? c.allgather(buf, shards, DType::fp32)
                                       : c.reduce_scatter(buf, shards, DType::fp32, ReduceOp::sum);
    }
    default:
      throw std::logic_error("microbench: not a collective");
  }
}

// Backend memory, released on every exit path.
struct BackendBuffer {
  Backend& backend;
  std::size_t bytes;
  void* data;
  BackendBuffer(Backend& b, std::size_t n) : backend(b), bytes(n), data(b.allocate(n)) {}
  ~BackendBuffer() { backend.release(data, bytes); }
  BackendBuffer(const BackendBuffer&) = delete;
  BackendBuffer& operator=(const BackendBuffer&) = delete;
};

void sweep_collectives(Backend& backend, Communicator& comm, void* buf, const RankJob& job, const MicrobenchConfig& cfg,
                       std::vector<BenchPoint>& points) {
  const int world = job.world_size;
  if (job.rank == 0 && cfg.progress)
    std::printf("%-15s %12s %12s %12s %12s\n", "collective", "bytes", "time_us", "algbw_GBps", "busbw_GBps");
  for (OpKind kind : cfg.kinds) {
    for (std::int64_t bytes = cfg.min_bytes; bytes <= cfg.max_bytes; bytes *= 2) {
      // Element counts divisible by the world size (shards of equal size).
      std::int64_t count = bytes / 4;
      count -= count % world;
      if (count <= 0) continue;
      for (int i = 0; i < cfg.warmup; ++i) run_once(comm, kind, buf, count, world);
      backend.barrier();
      const double t0 = now_s();
      for (int i = 0; i < cfg.iters; ++i) run_once(comm, kind, buf, count, world);
      backend.barrier();
      const double t = (now_s() - t0) / cfg.iters;
      BenchPoint p{kind, count * 4, world, t, 0, 0};
      p.algbw_GBps = static_cast<double>(p.bytes) / t / 1e9;
      p.busbw_GBps = p.algbw_GBps * bus_factor(kind, world);
      points.push_back(p);
      if (job.rank == 0 && cfg.progress) {
        std::printf("%-15s %12lld %12.1f %12.4f %12.4f\n", std::string(op_kind_name(kind)).c_str(),
                    static_cast<long long>(p.bytes), t * 1e6, p.algbw_GBps, p.busbw_GBps);
        std::fflush(stdout);
      }
    }
  }
}

// Ping-pong between rank 0 and `peer`: rank 0 sends, the peer sends it back. Everyone else waits
// at the barriers, so only this pair's link carries traffic.
void sweep_point_to_point(Backend& backend, Communicator& comm, void* buf, const RankJob& job,
                          const MicrobenchConfig& cfg, LinkClass link, int peer, std::vector<PointToPointPoint>& points) {
  const std::int64_t top = std::min(cfg.max_bytes, cfg.p2p_max_bytes);
  const bool first = job.rank == 0, second = job.rank == peer;
  if (first && cfg.progress)
    std::printf("\n%-15s %12s %12s %12s   (ping-pong, rank 0 <-> rank %d)\n", "point-to-point", "bytes", "time_us",
                "GBps", peer);
  for (std::int64_t bytes = cfg.min_bytes; bytes <= top; bytes *= 2) {
    const auto round_trip = [&] {
      if (first) {
        comm.send(buf, bytes, peer);
        comm.recv(buf, bytes, peer);
      } else if (second) {
        comm.recv(buf, bytes, 0);
        comm.send(buf, bytes, 0);
      }
    };
    for (int i = 0; i < cfg.warmup; ++i) round_trip();
    backend.barrier();
    const double t0 = now_s();
    for (int i = 0; i < cfg.iters; ++i) round_trip();
    const double t = (now_s() - t0) / (2.0 * cfg.iters);  // rank 0's clock stops at the last pong
    backend.barrier();
    if (!first) continue;
    PointToPointPoint p{link, peer, bytes, t, static_cast<double>(bytes) / t / 1e9};
    points.push_back(p);
    if (cfg.progress) {
      std::printf("%-15s %12lld %12.1f %12.4f\n", std::string(link_class_name(link)).c_str(),
                  static_cast<long long>(bytes), t * 1e6, p.bandwidth_GBps);
      std::fflush(stdout);
    }
  }
}

}  // namespace

std::string_view link_class_name(LinkClass c) { return c == LinkClass::intra_node ? "intra_node" : "inter_node"; }

int run_microbench_rank(const RankJob& job, const MicrobenchConfig& cfg, const BenchSink& sink) {
  if (job.exit_on_failure) ::signal(SIGPIPE, SIG_IGN);
  std::unique_ptr<TcpStoreServer> server;
  std::unique_ptr<TcpStore> store;
  std::unique_ptr<Backend> backend;
  try {
    if (job.serve_store)
      server = std::make_unique<TcpStoreServer>(listen_tcp(job.store_bind_host, job.store_port), job.store_secret);
    store = std::make_unique<TcpStore>(job.store_host, job.store_port, job.timeout, job.timeout, job.store_secret);
    backend = make_backend(cfg.backend, *store, job);
    auto comm = backend->make_communicator("calibrate");
    {
      BackendBuffer buf(*backend, static_cast<std::size_t>(cfg.max_bytes));
      const std::vector<float> ones(static_cast<std::size_t>(cfg.max_bytes / 4), 1.0f);
      backend->copy_to_buffer(buf.data, ones.data(), ones.size() * sizeof(float));
      MicrobenchResult result;
      sweep_collectives(*backend, *comm, buf.data, job, cfg, result.collectives);
      const int per_host = std::max(1, job.ranks_on_host);
      if (per_host > 1)
        sweep_point_to_point(*backend, *comm, buf.data, job, cfg, LinkClass::intra_node, 1, result.point_to_point);
      if (job.world_size > per_host)
        sweep_point_to_point(*backend, *comm, buf.data, job, cfg, LinkClass::inter_node, per_host,
                             result.point_to_point);
      if (cfg.interference_target_s > 0) {
        if (job.rank == 0 && cfg.progress) std::printf("\ncompute beside an allreduce, on every rank at once...\n");
        std::fflush(stdout);
        result.interference = measure_interference(*backend, *comm, buf.data, std::min<std::int64_t>(cfg.max_bytes, 4 << 20),
                                                   cfg.interference_target_s);
        const auto& m = *result.interference;
        if (job.rank == 0 && cfg.progress)
          std::printf("compute load     one rank alone %9.1f ms, every rank at once %9.1f ms (mean over ranks; slowest "
                      "%.1f ms): a rank runs at %.3f of a lone process (median of %d pairs; %.3f-%.3f)\n"
                      "compute load     alone %9.1f ms  beside %9.1f ms  x%.3f\n"
                      "allreduce %7lld B alone %9.1f ms  beside %9.1f ms  (%d beside)\n"
                      "allreduce %7lld B alone %9.1f ms  beside %9.1f ms  (%d beside)\n"
                      "beside compute an allreduce takes x%.3f + %.2f ms (the line through both sizes)\n",
                      m.compute_lone_s * 1e3, m.compute_alone_s * 1e3, m.compute_alone_slowest_s * 1e3, m.rank_speed(), m.speed_pairs,
                      m.rank_speed_low, m.rank_speed_high,
                      m.compute_alone_s * 1e3,
                      m.compute_beside_s * 1e3, m.compute_slowdown(),
                      static_cast<long long>(m.large.bytes), m.large.alone_s * 1e3, m.large.beside_s * 1e3,
                      m.large.beside, static_cast<long long>(m.small.bytes), m.small.alone_s * 1e3,
                      m.small.beside_s * 1e3, m.small.beside, m.collective_slowdown(), m.collective_latency_s() * 1e3);
      }
      if (cfg.hook_bucket_elements > 0) {  // reported by the sink (calibrate's cluster lines)
        result.hook_casts = measure_hook_casts(*backend, cfg.hook_bucket_elements, cfg.hook_bench_repetitions);
        result.fp16_reduce = measure_fp16_reduce(*backend, cfg.hook_bucket_elements, cfg.hook_bench_repetitions);
        result.fp32_add = measure_fp32_add(*backend, cfg.hook_bucket_elements, cfg.hook_bench_repetitions);
        result.fresh_copy = measure_fresh_copy(*backend, cfg.hook_bucket_elements, cfg.hook_bench_repetitions);
      }
      backend->barrier();
      if (job.rank == 0) sink(result);
    }
    backend->barrier();
    return 0;
  } catch (const CollectiveAborted& e) {
    std::fprintf(stderr, "redsim: rank %d: %s\n", job.rank, e.what());
    std::fflush(stderr);
    if (job.exit_on_failure) ::_exit(kExitPeerFailure);
    return kExitPeerFailure;
  } catch (const BackendUnavailable& e) {
    std::fprintf(stderr, "redsim: rank %d: %s\n", job.rank, e.what());
    std::fflush(stderr);
    if (job.exit_on_failure) ::_exit(kExitRankError);
    return kExitRankError;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "redsim: rank %d: %s\n", job.rank, e.what());
    std::fflush(stderr);
    if (job.exit_on_failure) ::_exit(kExitRankError);
    return kExitRankError;
  }
}

}  // namespace redsim::realexec
