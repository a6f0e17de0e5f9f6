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
#include "realexec/gloo_backend.h"
#include "realexec/tcp_store.h"

namespace redsim::realexec {

namespace {

Traffic run_once(Communicator& c, OpKind kind, float* buf, std::int64_t count, int world) {
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

}  // namespace

int run_microbench_rank(const RankJob& job, const MicrobenchConfig& cfg, const BenchSink& sink) {
  if (job.exit_on_failure) ::signal(SIGPIPE, SIG_IGN);
  std::unique_ptr<TcpStoreServer> server;
  std::unique_ptr<TcpStore> store;
  std::unique_ptr<Backend> backend;
  try {
    if (cfg.backend != "gloo") throw BackendUnavailable("calibrate microbenchmarks support --backend gloo only");
    if (job.serve_store) server = std::make_unique<TcpStoreServer>(listen_tcp("", job.store_port));
    store = std::make_unique<TcpStore>(job.store_host, job.store_port, job.timeout, job.timeout);
    backend = make_gloo_backend(*store, job.rank, job.world_size, {job.gloo_hostname, job.gloo_iface, job.timeout});
    auto comm = backend->make_communicator("calibrate");
    const int world = job.world_size;
    const std::int64_t max_count = cfg.max_bytes / 4;
    std::vector<float> buf(static_cast<std::size_t>(max_count), 1.0f);
    std::vector<BenchPoint> points;
    if (job.rank == 0 && cfg.progress)
      std::printf("%-15s %12s %12s %12s %12s\n", "collective", "bytes", "time_us", "algbw_GBps", "busbw_GBps");
    for (OpKind kind : cfg.kinds) {
      for (std::int64_t bytes = cfg.min_bytes; bytes <= cfg.max_bytes; bytes *= 2) {
        // Element counts divisible by the world size (shards of equal size).
        std::int64_t count = bytes / 4;
        count -= count % world;
        if (count <= 0) continue;
        std::fill(buf.begin(), buf.begin() + count, 1.0f);
        for (int i = 0; i < cfg.warmup; ++i) run_once(*comm, kind, buf.data(), count, world);
        backend->barrier();
        const double t0 = now_s();
        for (int i = 0; i < cfg.iters; ++i) run_once(*comm, kind, buf.data(), count, world);
        backend->barrier();
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
    backend->barrier();
    if (job.rank == 0) sink(points);
    backend->barrier();
    return 0;
  } catch (const CollectiveAborted& e) {
    std::fprintf(stderr, "redsim: rank %d: %s\n", job.rank, e.what());
    std::fflush(stderr);
    if (job.exit_on_failure) ::_exit(kExitPeerFailure);
    return kExitPeerFailure;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "redsim: rank %d: %s\n", job.rank, e.what());
    std::fflush(stderr);
    if (job.exit_on_failure) ::_exit(kExitRankError);
    return kExitRankError;
  }
}

}  // namespace redsim::realexec
