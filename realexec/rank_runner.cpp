#include "realexec/rank_runner.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

#include "core/error.h"
#include "realexec/gloo_backend.h"
#include "realexec/tcp_store.h"
#ifdef REDSIM_HAVE_NCCL
#include "realexec/nccl_backend.h"
#endif

namespace redsim::realexec {
namespace {

std::vector<char> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }
std::string string_of(const std::vector<char>& v) { return {v.begin(), v.end()}; }

// Every rank states its plan's shape and the buffer scale its memory allows; rank 0 checks the
// plans agree, takes the smallest scale (or the first refusal) and publishes the decision.
BufferScale agree_buffer_scale(TcpStore& store, const Plan& plan, const RankJob& job, const RunConfig& cfg,
                               const Backend& backend) {
  const std::int64_t bytes = collective_buffer_bytes(plan, 1.0);
  std::ostringstream mine;
  mine << "ops=" << plan.ops.size() << " bytes=" << bytes << " streams=" << plan.streams.size() << "\n";
  try {
    const auto s = decide_buffer_scale(cfg.buffer_scale, bytes, job.ranks_on_host, backend.memory_budget_bytes(job.ranks_on_host));
    mine << "ok " << s.factor << "\n" << s.reason;
  } catch (const std::invalid_argument& e) {
    mine << "err\n" << e.what();
  }
  store.set("redsim/prep/" + std::to_string(job.rank), bytes_of(mine.str()));

  if (job.rank == 0) {
    std::string fingerprint, decision;
    double best = 2.0;
    std::string best_reason;
    for (int r = 0; r < job.world_size && decision.empty(); ++r) {
      const std::string v = string_of(store.get("redsim/prep/" + std::to_string(r)));
      std::istringstream in(v);
      std::string fp, status_line, reason;
      std::getline(in, fp);
      std::getline(in, status_line);
      std::getline(in, reason, '\0');
      if (r == 0) fingerprint = fp;
      if (fp != fingerprint)
        decision = "err\nrank " + std::to_string(r) + " built a different plan (" + fp + ") from rank 0's (" + fingerprint +
                   "): give every rank the same trace, cluster and knobs";
      else if (status_line.rfind("err", 0) == 0)
        decision = "err\nrank " + std::to_string(r) + ": " + reason;
      else {
        const double f = std::stod(status_line.substr(3));
        if (f < best) {
          best = f;
          best_reason = reason + (job.world_size > 1 && r != 0 ? " (on rank " + std::to_string(r) + "'s host)" : "");
        }
      }
    }
    if (decision.empty()) {
      std::ostringstream d;
      d.precision(17);
      d << "ok " << best << "\n" << best_reason;
      decision = d.str();
    }
    store.set("redsim/prep/decision", bytes_of(decision));
  }
  const std::string d = string_of(store.get("redsim/prep/decision"));
  std::istringstream in(d);
  std::string status_line, reason;
  std::getline(in, status_line);
  std::getline(in, reason, '\0');
  if (status_line.rfind("err", 0) == 0) throw InputError("", "", reason);
  BufferScale s;
  s.factor = std::stod(status_line.substr(3));
  s.reason = reason;
  return s;
}

// The model state scaled by `factor` (each kind alike, so the strategy's proportions stay).
HeldMemory scaled_held(HeldMemory h, double factor) {
  if (factor == 1.0) return h;
  for (std::int64_t* b : {&h.params_bytes, &h.grads_bytes, &h.optimizer_bytes})
    *b = std::llround(static_cast<double>(*b) * factor);
  return h;
}

// The collective buffers come first (they are what the run times); the model state is held at
// the buffer scale if it fits beside them in what this rank may use, else at the largest
// 2^-k below that which does (0: none fits). The run reports the factor with the bytes.
double model_state_scale(std::int64_t state_bytes, std::int64_t buffer_bytes, double buffer_scale,
                         std::int64_t budget_bytes) {
  const double left = static_cast<double>(budget_bytes) - static_cast<double>(buffer_bytes) * buffer_scale;
  double f = buffer_scale;
  while (f > 1e-6 && static_cast<double>(state_bytes) * f > left) f /= 2;
  return static_cast<double>(state_bytes) * f > left ? 0.0 : f;
}

class Progress {
 public:
  Progress(bool enabled, int warmup, int steps) : on_(enabled), tty_(::isatty(1) != 0), warmup_(warmup), steps_(steps) {}
  void step_done(int step, double local_s) {
    if (!on_) return;
    const bool warm = step < warmup_;
    char line[160];
    if (warm)
      std::snprintf(line, sizeof line, "warm-up %d/%d  %.3f ms", step + 1, warmup_, local_s * 1e3);
    else
      std::snprintf(line, sizeof line, "step %d/%d  %.3f ms", step - warmup_ + 1, steps_, local_s * 1e3);
    if (tty_) {
      std::cout << "\r" << line << "   " << std::flush;
      if (step + 1 == warmup_ + steps_) std::cout << "\n";
    } else {
      std::cout << line << "\n";
    }
    std::cout.flush();
  }

 private:
  bool on_, tty_;
  int warmup_, steps_;
};

}  // namespace

RankJob local_rank_job(int rank, int world_size, int store_port, std::chrono::milliseconds timeout) {
  RankJob job;
  job.rank = rank;
  job.world_size = world_size;
  job.store_host = "127.0.0.1";
  job.store_port = store_port;
  job.store_secret = store_secret_from([](const char* name) { return std::getenv(name); });
  job.local_rank = rank;
  job.ranks_on_host = world_size;
  job.gloo_hostname = "127.0.0.1";
  job.timeout = timeout;
  return job;
}

RankJob launched_rank_job(const LaunchEnv& env, std::chrono::milliseconds timeout) {
  RankJob job;
  job.rank = env.rank;
  job.world_size = env.world_size;
  job.store_host = env.master_addr;
  job.store_port = env.store_port;
  job.store_bind_host = env.store_bind_addr;
  job.store_secret = env.store_secret;
  job.serve_store = env.rank == 0;
  job.local_rank = env.local_rank;
  job.ranks_on_host = env.local_world_size;
  job.gloo_hostname = env.gloo_hostname;
  job.gloo_iface = env.gloo_iface;
  job.timeout = timeout;
  return job;
}

std::unique_ptr<Backend> make_backend(const std::string& name, gloo::rendezvous::Store& store, const RankJob& job) {
  if (name == "gloo") return make_gloo_backend(store, job.rank, job.world_size, {job.gloo_hostname, job.gloo_iface, job.timeout});
  if (name == "nccl") {
#ifdef REDSIM_HAVE_NCCL
    return make_nccl_backend(store, job.rank, job.world_size, {job.local_rank, job.timeout});
#else
    throw BackendUnavailable("this redsim was built without the NCCL backend (CUDA and NCCL were not found when it was configured)");
#endif
  }
  throw InputError("", "", "--backend: expected gloo|nccl, got \"" + name + "\"");
}


std::vector<std::string> available_backends() {
#ifdef REDSIM_HAVE_NCCL
  return {"gloo", "nccl"};
#else
  return {"gloo"};
#endif
}

std::string backend_unavailable_reason(const std::string& backend) {
  if (backend != "nccl") return "";
#ifdef REDSIM_HAVE_NCCL
  int fds[2];
  if (::pipe(fds) != 0) return "";
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::string why;
    const int n = cuda_device_count(&why);
    if (n > 0) why.clear();
    [[maybe_unused]] auto w = ::write(fds[1], why.data(), why.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string why;
  char buf[512];
  ssize_t got;
  while ((got = ::read(fds[0], buf, sizeof buf)) > 0) why.append(buf, static_cast<std::size_t>(got));
  ::close(fds[0]);
  if (pid > 0) ::waitpid(pid, nullptr, 0);
  return why.empty() ? "" : "the NCCL backend needs a CUDA device: " + why;
#else
  return "this redsim was built without the NCCL backend";
#endif
}

namespace {

// The executor's options: the agreed buffer scale, the fault injections asked for, and the
// model state each rank holds (scaled to the backend's memory budget; state_scale says by what).
ExecOptions exec_options(const Plan& plan, const RankJob& job, const RunConfig& cfg, Backend& backend,
                         const BufferScale& scale, double& state_scale) {
  ExecOptions eo;
  eo.buffer_scale = scale.factor;
  eo.inject = cfg.inject;
  eo.corrupt_op = cfg.corrupt_op;
  eo.corrupt_rank = cfg.corrupt_rank;
  state_scale = 0;
  if (cfg.model_state) {
    const HeldMemory state = model_state_bytes(plan, *cfg.model_state, job.rank);
    state_scale = model_state_scale(state.total_bytes(), collective_buffer_bytes(plan, 1.0), scale.factor,
                                    backend.memory_budget_bytes(job.ranks_on_host));
    eo.hold = scaled_held(state, state_scale);
  }
  return eo;
}

RankReport run_steps(Executor& executor, const RankJob& job, const RunConfig& cfg) {
  RankReport report;
  report.rank = job.rank;
  report.host = host_identity();
  Progress progress(cfg.progress && job.rank == 0, cfg.warmup_steps, cfg.steps);
  for (int step = 0; step < cfg.warmup_steps + cfg.steps; ++step) {
    StepRecord rec = executor.run_step(step);
    report.buffers_checked += rec.buffers_checked;
    double local_end = rec.origin_s;
    for (const auto& t : rec.ops) local_end = std::max(local_end, t.end_s);
    progress.step_done(step, local_end - rec.origin_s);
    if (step >= cfg.warmup_steps) report.steps.push_back(std::move(rec));
  }
  report.held = executor.held();
  report.peak_rss_bytes = peak_rss_bytes();
  return report;
}

// Rank 0: every rank's report from the store, assembled into the run's outcome.
RunOutcome gather_outcome(const Plan& plan, const RankJob& job, const RunConfig& cfg, const Backend& backend,
                          const BufferScale& scale, TcpStore& store) {
  std::vector<RankReport> reports;
  for (int r = 0; r < job.world_size; ++r)
    reports.push_back(deserialize_report(store.get("redsim/report/" + std::to_string(r)), plan.ops.size()));
  RunOutcome out;
  out.plan = scaled_plan(plan, scale.factor);
  out.measured = assemble(out.plan, reports);
  out.scale = scale;
  out.backend = cfg.backend;
  out.backend_description = backend.description();
  out.world_size = job.world_size;
  out.warmup_steps = cfg.warmup_steps;
  out.steps = cfg.steps;
  out.timeout_s = static_cast<double>(job.timeout.count()) / 1000.0;
  return out;
}

// The exit code and message for what stopped this rank.
int failure_code(const std::exception_ptr& failure, const RankJob& job, std::string& message) {
  try {
    std::rethrow_exception(failure);
  } catch (const CollectiveAborted& e) {
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g", static_cast<double>(job.timeout.count()) / 1000.0);
    message = std::string("collective aborted (a peer failed, or the ") + limit +
              " s collective timeout passed): " + e.what();
    return kExitPeerFailure;
  } catch (const VerificationError& e) {
    message = std::string("verification failed: ") + e.what();
    return kExitRankError;
  } catch (const InputError& e) {
    message = e.what();
    return kExitBadInput;
  } catch (const std::invalid_argument& e) {
    message = e.what();
    return kExitBadInput;
  } catch (const BackendUnavailable& e) {
    message = e.what();
    return kExitRankError;
  } catch (const std::exception& e) {
    message = e.what();
    // The store failing under a rank is a consequence of rank 0 (or the launcher) going away.
    return message.rfind("rendezvous store", 0) == 0 && job.rank != 0 ? kExitPeerFailure : kExitRankError;
  }
}

}  // namespace

int run_rank(const Plan& plan, const RankJob& job, const RunConfig& cfg, const ResultSink& sink) {
  if (job.exit_on_failure) ::signal(SIGPIPE, SIG_IGN);  // a dead peer's socket must not kill this rank
  // Declared outside the try block so that a failure does not wait for their destructors
  // (threads may be blocked in a collective until the timeout) before exiting.
  std::unique_ptr<TcpStoreServer> server;
  std::unique_ptr<TcpStore> store;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Executor> executor;
  int code = 0;
  std::string message;
  try {
    if (job.serve_store)
      server = std::make_unique<TcpStoreServer>(listen_tcp(job.store_bind_host, job.store_port), job.store_secret);
    store = std::make_unique<TcpStore>(job.store_host, job.store_port, job.timeout, job.timeout, job.store_secret);
    backend = make_backend(cfg.backend, *store, job);
    const BufferScale scale = agree_buffer_scale(*store, plan, job, cfg, *backend);
    if (job.rank == 0 && cfg.progress) {
      std::cout << "backend: " << backend->description() << ", " << job.world_size << " rank(s)\n";
      std::cout << "buffers: " << scale.reason << "\n" << std::flush;
    }
    double state_scale = 0;
    const ExecOptions eo = exec_options(plan, job, cfg, *backend, scale, state_scale);
    executor = std::make_unique<Executor>(plan, *backend, eo);
    RankReport report = run_steps(*executor, job, cfg);
    report.state_scale = state_scale;
    store->set("redsim/report/" + std::to_string(job.rank), serialize_report(report));
    if (job.rank == 0) sink(gather_outcome(plan, job, cfg, *backend, scale, *store));
  } catch (...) {
    code = failure_code(std::current_exception(), job, message);
  }
  if (code != 0) {
    std::cout.flush();
    std::cerr << "redsim: rank " << job.rank << ": " << message << "\n" << std::flush;
    if (job.exit_on_failure) {
      std::fflush(nullptr);
      ::_exit(code);
    }
  }
  return code;
}

}  // namespace redsim::realexec
