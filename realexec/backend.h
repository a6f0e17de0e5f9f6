// The communication backend interface the executor drives: Gloo over TCP on CPUs, NCCL on
// CUDA devices. A Backend is one rank's membership of the job; a Communicator is one
// independent channel (a Gloo context with its own TCP device, or an NCCL communicator with
// its own CUDA stream). All collectives are in place on one buffer, block until this rank's
// part is done, and return the bytes this rank sent and received for them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/collective_types.h"
#include "core/dtype.h"

namespace redsim::realexec {

// A run of elements [offset, offset + count) of a collective's buffer.
struct Segment {
  std::int64_t offset = 0;
  std::int64_t count = 0;
};

struct Traffic {
  std::int64_t bytes_sent = 0;
  std::int64_t bytes_received = 0;
  Traffic& operator+=(const Traffic& o) {
    bytes_sent += o.bytes_sent;
    bytes_received += o.bytes_received;
    return *this;
  }
};

// A collective could not complete because a peer went away or the collective timed out. A rank
// that fails this way is a consequence, not a cause: it exits with kExitPeerFailure so the
// launcher can name the rank that failed first.
class CollectiveAborted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The backend cannot run on this machine (no GPU, no NCCL in this build, ...).
class BackendUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  // Every rank ends with the reduction of all ranks' buffers (avg: sum divided by world size).
  virtual Traffic allreduce(void* buf, std::int64_t count, DType dtype, ReduceOp op) = 0;
  // `root` ends with the reduction; other ranks' buffers are left unspecified.
  virtual Traffic reduce(void* buf, std::int64_t count, DType dtype, ReduceOp op, int root) = 0;
  // Every rank ends with root's buffer.
  virtual Traffic broadcast(void* buf, std::int64_t count, DType dtype, int root) = 0;
  // The same, as Gloo's binomial tree (gloo::broadcast, what PyTorch's ProcessGroupGloo runs).
  virtual Traffic broadcast_binomial(void* buf, std::int64_t count, DType dtype, int root) = 0;
  // shards[r] is rank r's part of the buffer (element offsets from `base`, any sizes, zero
  // allowed). Rank r ends with the reduction of shard r in place; the rest is unspecified.
  virtual Traffic reduce_scatter(void* base, const std::vector<Segment>& shards, DType dtype, ReduceOp op) = 0;
  // Rank r contributes shards[r]; every rank ends with every shard.
  virtual Traffic allgather(void* base, const std::vector<Segment>& shards, DType dtype) = 0;
  // Point-to-point (calibrate's per-link sweeps): blocking; only the two ranks involved call.
  // Messages between one pair arrive in the order they were sent.
  virtual Traffic send(const void* buf, std::int64_t bytes, int peer) = 0;
  virtual Traffic recv(void* buf, std::int64_t bytes, int peer) = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;  // "gloo" or "nccl"
  virtual std::string description() const = 0;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;

  // Collective over all ranks: every rank creates its communicators in the same order with the
  // same names.
  virtual std::unique_ptr<Communicator> make_communicator(const std::string& name) = 0;
  // A communicator over `members` (world ranks in ring order, this rank among them; hsdp's
  // shard groups): its collectives see rank = the place in `members`, size = members.size().
  // Every member calls it with the same name and members; other groups may use the same name.
  virtual std::unique_ptr<Communicator> make_group_communicator(const std::string& name, const std::vector<int>& members) {
    (void)name;
    (void)members;
    throw BackendUnavailable(std::string(this->name()) + " has no communicators over part of the job yet");
  }
  // On the backend's own control communicator; aligns the start of every step.
  virtual void barrier() = 0;

  // Buffer memory: host memory for Gloo, device memory for NCCL.
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* p, std::size_t bytes) = 0;
  virtual bool host_accessible() const = 0;
  virtual void copy_to_buffer(void* dst, const void* host_src, std::size_t bytes) = 0;
  virtual void copy_from_buffer(void* host_dst, const void* src, std::size_t bytes) = 0;
  // Buffer bytes this rank may allocate, given how many ranks share the host (or device).
  virtual std::int64_t memory_budget_bytes(int ranks_on_host) const = 0;
  // NCCL's avg pre-multiplies every input by 1/N, which rounds; Gloo's (sum, then divide) does not.
  virtual bool avg_is_exact() const { return true; }
};

// Exit statuses of a rank process.
inline constexpr int kExitRankError = 1;     // this rank failed (verification, internal error)
inline constexpr int kExitPeerFailure = 3;   // a collective aborted: a peer died or timed out

}  // namespace redsim::realexec
