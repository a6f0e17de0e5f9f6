// The executor: one rank's walk through a Plan on real communicators.
//
// One thread per stream of the plan. Each thread runs its stream's ops in Plan order (the
// order is the same on every rank, so no rank can deadlock another); an op starts once its
// dependencies (on any stream) have ended. Compute ops busy-wait their duration on the
// monotonic clock; collectives go to the stream's communicators, one per channel, each
// channel driven by its own thread and issued concurrently. Every collective has its own real
// buffer of its (scaled) size; before a step each rank fills it with its contribution, after
// the step it checks the result against the reference (buffer_pattern.h) and throws
// VerificationError if anything is off. Steps start together: a barrier on the backend's
// control communicator, after which the rank notes the step's origin on its clock.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/plan.h"
#include "core/timeline.h"
#include "realexec/backend.h"
#include "realexec/buffer_pattern.h"
#include "realexec/exec_layout.h"
#include "realexec/model_state.h"

namespace redsim::realexec {

class VerificationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Test-only failure injection (redsim run reads it from REDSIM_TEST_FAIL_* variables): at the
// first collective of `step`, rank `rank` dies.
struct FailureInjection {
  enum class Mode { kill, exit, hang };
  int rank = -1;
  int step = -1;
  Mode mode = Mode::kill;
};

struct ExecOptions {
  double buffer_scale = 1.0;
  FailureInjection inject;
  // Test-only: after op `corrupt_op` completes on rank `corrupt_rank`, one element of its buffer
  // is changed, so verification must fail.
  int corrupt_op = -1;
  int corrupt_rank = -1;
  // Parameters, gradients and optimizer state to hold (already at the buffer scale; buffer_bytes
  // is ignored): allocated and touched for the executor's lifetime, so the process's resident
  // memory holds them as a training process would (model_state.h).
  HeldMemory hold;
};

struct StepRecord {
  double origin_s = 0;            // this rank's monotonic clock when it left the step barrier
  std::vector<OpTiming> ops;      // per plan op, absolute monotonic seconds
  std::int64_t buffers_checked = 0;
};

class Executor {
 public:
  // Creates the communicators (collective: every rank constructs its Executor together) and
  // allocates the buffers. Throws std::invalid_argument for a plan it cannot run.
  Executor(const Plan& plan, Backend& backend, ExecOptions options);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Runs one step (step numbers count warm-up steps too). Throws VerificationError,
  // CollectiveAborted or the error of the op that failed; after a throw the executor is done.
  StepRecord run_step(int step);

  std::int64_t buffer_bytes() const { return buffer_bytes_; }
  // What this rank holds: the model state it allocated and its collective buffers.
  HeldMemory held() const;
  const Plan& plan() const { return plan_; }

 private:
  struct StreamState;
  class ChannelWorker;

  void stream_loop(std::size_t s);
  void run_op(std::size_t s, const PlanOp& op, int gen);
  Traffic run_collective(std::size_t s, const PlanOp& op);
  Traffic run_channel(std::size_t s, const PlanOp& op, int channel);
  void fill_buffers();
  std::int64_t verify_buffers(int step);
  // This rank's place in the op's communicator: its group's member index, or its rank.
  int op_rank(const PlanOp& op) const { return op.group_size > 0 ? group_member_index(op, rank_) : rank_; }

  Plan plan_;
  Backend& backend_;
  ExecOptions options_;
  int rank_ = 0;
  int world_ = 1;

  std::vector<CollectiveLayout> layouts_;   // per op (empty elems for compute ops)
  std::vector<std::optional<ValuePattern>> patterns_;  // per op (collectives only)
  std::vector<void*> buffers_;              // per op (nullptr for compute ops)
  std::vector<char> staging_;               // host copy for device-memory backends
  std::vector<std::pair<void*, std::size_t>> state_blocks_;  // parameters, gradients, optimizer state
  std::int64_t buffer_bytes_ = 0;
  std::vector<std::unique_ptr<StreamState>> streams_;

  std::mutex mutex_;
  std::condition_variable cv_;
  int gen_ = -1;              // the step generation released to the stream threads
  int current_step_ = -1;
  std::size_t streams_done_ = 0;
  bool shutdown_ = false;
  bool failed_ = false;
  std::exception_ptr error_;
  std::string error_where_;
  std::vector<int> done_gen_;  // per op: the generation in which it last ended
  StepRecord record_;
  std::vector<std::thread> threads_;
};

}  // namespace redsim::realexec
