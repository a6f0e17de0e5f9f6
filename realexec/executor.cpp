#include "realexec/executor.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>

#include "realexec/clock.h"

namespace redsim::realexec {

// A channel's own thread: channels 1..C-1 of a comm stream run here while the stream thread
// runs channel 0, so a collective's channels progress concurrently.
class Executor::ChannelWorker {
 public:
  ChannelWorker() : thread_([this] { loop(); }) {}
  ~ChannelWorker() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void post(std::function<Traffic()> task) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      task_ = std::move(task);
      done_ = false;
      error_ = nullptr;
    }
    cv_.notify_all();
  }
  Traffic wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return done_; });
    if (error_) std::rethrow_exception(error_);
    return result_;
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || task_ != nullptr; });
      if (stop_) return;
      auto task = std::move(task_);
      task_ = nullptr;
      lock.unlock();
      Traffic r;
      std::exception_ptr err;
      try {
        r = task();
      } catch (...) {
        err = std::current_exception();
      }
      lock.lock();
      result_ = r;
      error_ = err;
      done_ = true;
      cv_.notify_all();
    }
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  std::function<Traffic()> task_;
  bool done_ = true, stop_ = false;
  Traffic result_;
  std::exception_ptr error_;
  std::thread thread_;
};

struct Executor::StreamState {
  std::vector<std::uint32_t> ops;
  std::vector<std::unique_ptr<Communicator>> channels;
  std::vector<std::unique_ptr<ChannelWorker>> workers;  // channels 1..C-1
  bool injected = false;
};

Executor::Executor(const Plan& plan, Backend& backend, ExecOptions options)
    : plan_(plan), backend_(backend), options_(options), rank_(backend.rank()), world_(backend.world_size()) {
  check_plan_for_realexec(plan_, world_);
  const std::size_t n_ops = plan_.ops.size();
  layouts_.resize(n_ops);
  patterns_.resize(n_ops);
  buffers_.assign(n_ops, nullptr);
  done_gen_.assign(n_ops, -1);
  record_.ops.resize(n_ops);

  streams_.resize(plan_.streams.size());
  for (auto& s : streams_) s = std::make_unique<StreamState>();
  std::vector<int> channels_of_stream(plan_.streams.size(), 0);
  std::vector<const PlanOp*> group_of_stream(plan_.streams.size(), nullptr);  // its first collective
  std::int64_t max_bytes = 0;
  for (const auto& op : plan_.ops) {
    streams_[op.stream]->ops.push_back(op.id);
    if (!op_kind_is_collective(op.kind)) continue;
    layouts_[op.id] = layout_collective(op, world_, options_.buffer_scale);
    // Groups get different values (salt), so a member talking to another group's is caught.
    const auto salt = op.id + 3u * static_cast<std::uint32_t>(group_index(op, rank_));
    patterns_[op.id].emplace(op.kind, op.reduce_op, op.dtype, group_ranks(op, world_), op.root, salt);
    if (group_of_stream[op.stream] == nullptr) group_of_stream[op.stream] = &op;
    channels_of_stream[op.stream] = std::max(channels_of_stream[op.stream], op.channels);
    buffer_bytes_ += layouts_[op.id].bytes();
    max_bytes = std::max(max_bytes, layouts_[op.id].bytes());
  }
  // Communicators: every rank creates them in the same order (stream index, then channel).
  for (std::size_t s = 0; s < streams_.size(); ++s) {
    for (int c = 0; c < channels_of_stream[s]; ++c) {
      const std::string name = "s" + std::to_string(s) + "." + plan_.streams[s] + ".ch" + std::to_string(c);
      const PlanOp* first = group_of_stream[s];
      streams_[s]->channels.push_back(first != nullptr && first->group_size > 0
                                          ? backend_.make_group_communicator(name, group_members(*first, world_, rank_))
                                          : backend_.make_communicator(name));
      if (c > 0) streams_[s]->workers.push_back(std::make_unique<ChannelWorker>());
    }
  }
  for (const auto& op : plan_.ops)
    if (op_kind_is_collective(op.kind))
      buffers_[op.id] = backend_.allocate(static_cast<std::size_t>(layouts_[op.id].bytes()));
  if (!backend_.host_accessible()) staging_.resize(static_cast<std::size_t>(max_bytes));
  // The model state, where the backend keeps tensors (host or device memory). Backends touch
  // what they allocate, so every page is resident: the peak RSS the run reports includes it.
  for (const std::int64_t b : {options_.hold.params_bytes, options_.hold.grads_bytes, options_.hold.optimizer_bytes}) {
    if (b <= 0) continue;
    state_blocks_.push_back({backend_.allocate(static_cast<std::size_t>(b)), static_cast<std::size_t>(b)});
  }

  for (std::size_t s = 0; s < streams_.size(); ++s)
    if (!streams_[s]->ops.empty()) threads_.emplace_back([this, s] { stream_loop(s); });
}

Executor::~Executor() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    shutdown_ = true;
    failed_ = true;  // wakes dependency waits
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
  streams_.clear();  // channel workers and communicators go before the buffers they used
  for (const auto& op : plan_.ops)
    if (buffers_[op.id] != nullptr) backend_.release(buffers_[op.id], static_cast<std::size_t>(layouts_[op.id].bytes()));
  for (const auto& [p, b] : state_blocks_) backend_.release(p, b);
}

HeldMemory Executor::held() const {
  HeldMemory h = options_.hold;
  h.buffer_bytes = buffer_bytes_;
  return h;
}

void Executor::stream_loop(std::size_t s) {
  int seen = -1;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return shutdown_ || gen_ > seen; });
      if (shutdown_) return;
      seen = gen_;
    }
    std::uint32_t current = 0;
    try {
      for (auto id : streams_[s]->ops) {
        current = id;
        const auto& op = plan_.ops[id];
        {
          std::unique_lock<std::mutex> lock(mutex_);
          cv_.wait(lock, [&] {
            if (failed_) return true;
            for (auto d : op.deps)
              if (done_gen_[d] != seen) return false;
            return true;
          });
          if (failed_) break;
        }
        run_op(s, op, seen);
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!failed_) {
        failed_ = true;
        error_ = std::current_exception();
        error_where_ = "op " + std::to_string(current) + " \"" + plan_.ops[current].name + "\" on stream " + plan_.streams[s];
      }
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++streams_done_;
    }
    cv_.notify_all();
  }
}

void Executor::run_op(std::size_t s, const PlanOp& op, int gen) {
  OpTiming t;
  t.ready_s = now_s();
  if (op_kind_is_collective(op.kind)) {
    auto& st = *streams_[s];
    const auto& inj = options_.inject;
    if (inj.rank == rank_ && inj.step == current_step_ && !st.injected) {
      st.injected = true;
      std::fprintf(stderr, "redsim: rank %d: test failure injection at step %d, op \"%s\"\n", rank_, current_step_,
                   op.name.c_str());
      std::fflush(stderr);
      if (inj.mode == FailureInjection::Mode::kill) ::raise(SIGKILL);
      if (inj.mode == FailureInjection::Mode::exit) ::_exit(kExitRankError);
      for (;;) ::pause();  // hang
    }
    t.start_s = now_s();
    const Traffic tr = run_collective(s, op);
    t.end_s = now_s();
    t.bytes_sent = tr.bytes_sent;
    t.bytes_received = tr.bytes_received;
    if (op.id == static_cast<std::uint32_t>(options_.corrupt_op) && rank_ == options_.corrupt_rank &&
        backend_.host_accessible() && layouts_[op.id].elems > 0) {
      // Test-only: damage the result so verification must catch it.
      auto* p = static_cast<unsigned char*>(buffers_[op.id]);
      const auto& L = layouts_[op.id];
      std::int64_t i = L.elems / 2;
      if (!L.shards.empty() && op.kind == OpKind::reduce_scatter) {
        const auto& own = L.shards[static_cast<std::size_t>(group_member_index(op, rank_))];
        i = own.offset + own.count / 2;
      }
      p[i * L.elem_bytes + L.elem_bytes - 1] ^= 0x40;  // flips an exponent bit
    }
  } else {
    t.start_s = t.ready_s;
    t.end_s = op.duration_s > 0 ? spin_until(t.start_s + op.duration_s) : now_s();
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    record_.ops[op.id] = t;
    done_gen_[op.id] = gen;
  }
  cv_.notify_all();
}

Traffic Executor::run_collective(std::size_t s, const PlanOp& op) {
  auto& st = *streams_[s];
  const int C = op.channels;
  for (int c = 1; c < C; ++c)
    st.workers[static_cast<std::size_t>(c - 1)]->post([this, s, &op, c] { return run_channel(s, op, c); });
  Traffic total;
  std::exception_ptr err;
  try {
    total = run_channel(s, op, 0);
  } catch (...) {
    err = std::current_exception();
  }
  for (int c = 1; c < C; ++c) {
    try {
      total += st.workers[static_cast<std::size_t>(c - 1)]->wait();
    } catch (...) {
      if (!err) err = std::current_exception();
    }
  }
  if (err) std::rethrow_exception(err);
  return total;
}

Traffic Executor::run_channel(std::size_t s, const PlanOp& op, int c) {
  Communicator& comm = *streams_[s]->channels[static_cast<std::size_t>(c)];
  const auto& L = layouts_[op.id];
  char* base = static_cast<char*>(buffers_[op.id]);
  switch (op.kind) {
    case OpKind::allreduce:
    case OpKind::reduce:
    case OpKind::broadcast: {
      const Segment& p = L.pieces[static_cast<std::size_t>(c)];
      if (p.count == 0) return {};
      char* ptr = base + p.offset * L.elem_bytes;
      if (op.kind == OpKind::allreduce) return comm.allreduce(ptr, p.count, op.dtype, op.reduce_op);
      if (op.kind == OpKind::reduce) return comm.reduce(ptr, p.count, op.dtype, op.reduce_op, op.root);
      if (op.algorithm == Algorithm::binomial) return comm.broadcast_binomial(ptr, p.count, op.dtype, op.root);
      return comm.broadcast(ptr, p.count, op.dtype, op.root);
    }
    case OpKind::reduce_scatter:
      return comm.reduce_scatter(base, L.channel_shards[static_cast<std::size_t>(c)], op.dtype, op.reduce_op);
    case OpKind::allgather:
      return comm.allgather(base, L.channel_shards[static_cast<std::size_t>(c)], op.dtype);
    default:
      return {};
  }
}

void Executor::fill_buffers() {
  for (const auto& op : plan_.ops) {
    if (!op_kind_is_collective(op.kind)) continue;
    const auto& L = layouts_[op.id];
    if (backend_.host_accessible()) {
      patterns_[op.id]->fill(buffers_[op.id], L.elems, op_rank(op), L.shards);
    } else {
      patterns_[op.id]->fill(staging_.data(), L.elems, op_rank(op), L.shards);
      backend_.copy_to_buffer(buffers_[op.id], staging_.data(), static_cast<std::size_t>(L.bytes()));
    }
  }
}

std::int64_t Executor::verify_buffers(int step) {
  std::int64_t checked = 0;
  for (const auto& op : plan_.ops) {
    if (!op_kind_is_collective(op.kind)) continue;
    const auto& L = layouts_[op.id];
    const void* host = buffers_[op.id];
    if (!backend_.host_accessible()) {
      backend_.copy_from_buffer(staging_.data(), buffers_[op.id], static_cast<std::size_t>(L.bytes()));
      host = staging_.data();
    }
    double tol = 0;
    if (op.reduce_op == ReduceOp::avg && !backend_.avg_is_exact()) {
      const double ulp = op.dtype == DType::fp32 ? std::ldexp(1.0, -23) : op.dtype == DType::fp16 ? std::ldexp(1.0, -10)
                                                                                                   : std::ldexp(1.0, -7);
      tol = 2.0 * group_ranks(op, world_) * ulp;
    }
    if (auto bad = patterns_[op.id]->check(host, L.elems, op_rank(op), L.shards, tol))
      throw VerificationError("rank " + std::to_string(rank_) + ": step " + std::to_string(step) + ": op " +
                              std::to_string(op.id) + " \"" + op.name + "\" (" + std::string(op_kind_name(op.kind)) +
                              " " + std::string(reduce_op_name(op.reduce_op)) + " " + std::string(dtype_name(op.dtype)) +
                              " over " + std::to_string(group_ranks(op, world_)) + " ranks, " + std::to_string(L.elems) +
                              " elements) is wrong: " + *bad);
    ++checked;
  }
  return checked;
}

StepRecord Executor::run_step(int step) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failed_) throw std::logic_error("executor: run_step after a failed step");
  }
  fill_buffers();
  backend_.barrier();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    current_step_ = step;
    record_.origin_s = now_s();
    for (auto& t : record_.ops) t = OpTiming{};
    streams_done_ = 0;
    ++gen_;
  }
  cv_.notify_all();
  {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return failed_ || streams_done_ == threads_.size(); });
    if (failed_) {
      // Give a stream that is still finishing a moment to report its own (first) error.
      if (!error_) cv_.wait_for(lock, std::chrono::milliseconds(100), [&] { return error_ != nullptr; });
      if (error_) {
        try {
          std::rethrow_exception(error_);
        } catch (const CollectiveAborted& e) {
          throw CollectiveAborted("step " + std::to_string(step) + ", " + error_where_ + ": " + e.what());
        } catch (const VerificationError&) {
          throw;
        } catch (const std::exception& e) {
          throw std::runtime_error("step " + std::to_string(step) + ", " + error_where_ + ": " + e.what());
        }
      }
      throw std::runtime_error("step " + std::to_string(step) + " failed");
    }
  }
  StepRecord out = record_;
  out.buffers_checked = verify_buffers(step);
  return out;
}

}  // namespace redsim::realexec
