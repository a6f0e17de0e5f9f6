// One rank of a real run, start to finish: rendezvous, backend, buffer-scale agreement, the
// executor's warm-up and measured steps, and the gather of every rank's timings to rank 0,
// which hands the assembled measurement to a sink (redsim run writes the result files there).
#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/plan.h"
#include "realexec/executor.h"
#include "realexec/launch_env.h"
#include "realexec/measurement.h"
#include "realexec/memory_budget.h"
#include "realexec/model_state.h"

namespace gloo::rendezvous {
class Store;
}

namespace redsim::realexec {

class Backend;

struct RankJob {
  int rank = 0;
  int world_size = 1;
  std::string store_host = "127.0.0.1";
  std::string store_bind_host = "127.0.0.1";  // where a serving rank listens (never every interface)
  int store_port = 0;
  std::string store_secret;  // the job's secret, presented to the store
  bool serve_store = false;  // this rank (0 of a launched job) serves the store on store_port
  int local_rank = 0;        // NCCL device selection
  int ranks_on_host = 1;     // for the memory budget
  std::string gloo_hostname = "127.0.0.1";
  std::string gloo_iface;
  std::chrono::milliseconds timeout{60000};
  // Process ranks: on failure print the reason and _exit at once (threads may still be blocked
  // in a collective). In-process ranks (tests) unwind instead.
  bool exit_on_failure = true;
};

// A rank of a job on this host started by redsim itself (the store on 127.0.0.1:store_port; the
// secret from REDSIM_STORE_SECRET, which launch_local sets in each rank).
RankJob local_rank_job(int rank, int world_size, int store_port, std::chrono::milliseconds timeout);
// This process's rank of a job started by torchrun/mpirun/srun (rank 0 serves the store).
RankJob launched_rank_job(const LaunchEnv& env, std::chrono::milliseconds timeout);

struct RunConfig {
  std::string backend = "gloo";  // "gloo" or "nccl"
  int warmup_steps = 3;
  int steps = 20;
  std::optional<double> buffer_scale;  // nullopt: auto
  FailureInjection inject;
  int corrupt_op = -1;  // test-only, see ExecOptions
  int corrupt_rank = -1;
  bool progress = true;  // rank 0 prints step k/N
  // The model state each rank holds beside its buffers (model_state.h); unset: none.
  std::optional<ModelStateSpec> model_state;
};

struct RunOutcome {
  Plan plan;  // as executed: collective bytes at the buffer scale
  Measured measured;
  BufferScale scale;
  std::string backend;
  std::string backend_description;
  int world_size = 1;
  int warmup_steps = 0;
  int steps = 0;
  double timeout_s = 0;
};

using ResultSink = std::function<void(const RunOutcome&)>;

// Runs this rank; rank 0 calls `sink` with the measurement. Returns the rank's exit status
// (0, kExitRankError, kExitPeerFailure, or 2 for bad input/options), after printing the reason
// of a failure as one line "redsim: rank R: ..." on stderr.
int run_rank(const Plan& plan, const RankJob& job, const RunConfig& config, const ResultSink& sink);

// This rank's membership of `name` (gloo|nccl), rendezvousing through `store`. Throws
// BackendUnavailable (nccl not built) or InputError (unknown name).
std::unique_ptr<Backend> make_backend(const std::string& name, gloo::rendezvous::Store& store, const RankJob& job);

// Backends this build has ("gloo", and "nccl" when built with CUDA and NCCL).
std::vector<std::string> available_backends();

// Why `backend` cannot run on this machine ("" if it can). For nccl the CUDA runtime is asked in
// a short-lived child process, so the caller stays free of CUDA state and may still fork ranks.
std::string backend_unavailable_reason(const std::string& backend);

}  // namespace redsim::realexec
