#include "realexec/nccl_backend.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "realexec/traffic.h"

namespace redsim::realexec {
namespace {

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

void nccl_check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(r));
}

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::fp32:
      return ncclFloat32;
    case DType::fp16:
      return ncclFloat16;
    case DType::bf16:
      return ncclBfloat16;
    case DType::fp64:
      return ncclFloat64;
    case DType::int64:
      return ncclInt64;
    case DType::int32:
      return ncclInt32;
    case DType::uint8:
    case DType::bool8:
      return ncclUint8;
  }
  throw std::invalid_argument("NCCL backend: unsupported dtype " + std::string(dtype_name(t)));
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return ncclSum;
    case ReduceOp::avg:
      return ncclAvg;
    case ReduceOp::max:
      return ncclMax;
    case ReduceOp::min:
      return ncclMin;
    case ReduceOp::prod:
      return ncclProd;
  }
  return ncclSum;
}

// Rank 0 creates the unique id and publishes it; everyone else reads it.
ncclUniqueId bootstrap_id(gloo::rendezvous::Store& store, const std::string& name, int rank) {
  ncclUniqueId id{};
  const std::string key = "redsim/nccl/" + name;
  if (rank == 0) {
    nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    store.set(key, std::vector<char>(id.internal, id.internal + sizeof id.internal));
  } else {
    store.wait({key});
    auto v = store.get(key);
    if (v.size() != sizeof id.internal) throw std::runtime_error("NCCL bootstrap: malformed unique id under " + key);
    std::memcpy(id.internal, v.data(), sizeof id.internal);
  }
  return id;
}

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(ncclComm_t comm, int device, int rank, int world, std::chrono::milliseconds timeout)
      : comm_(comm), device_(device), rank_(rank), world_(world), timeout_(timeout) {
    cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  ~NcclCommunicator() override {
    cudaSetDevice(device_);
    if (staging_ != nullptr) cudaFree(staging_);
    if (!aborted_) ncclCommDestroy(comm_);
    cudaStreamDestroy(stream_);
  }

  Traffic allreduce(void* buf, std::int64_t count, DType dtype, ReduceOp op) override {
    if (count <= 0) return {};
    begin();
    nccl_check(ncclAllReduce(buf, buf, static_cast<std::size_t>(count), nccl_type(dtype), nccl_op(op), comm_, stream_),
               "ncclAllReduce");
    finish("allreduce");
    return ring_allreduce_traffic(count * dtype_size_bytes(dtype), world_, rank_);
  }

  Traffic reduce(void* buf, std::int64_t count, DType dtype, ReduceOp op, int root) override {
    if (count <= 0) return {};
    begin();
    nccl_check(ncclReduce(buf, buf, static_cast<std::size_t>(count), nccl_type(dtype), nccl_op(op), root, comm_, stream_),
               "ncclReduce");
    finish("reduce");
    return ring_chain_traffic(count * dtype_size_bytes(dtype), world_, rank_, root, true);
  }

  // NCCL broadcasts with rings only.
  Traffic broadcast_binomial(void* buf, std::int64_t count, DType dtype, int root) override {
    return broadcast(buf, count, dtype, root);
  }

  Traffic broadcast(void* buf, std::int64_t count, DType dtype, int root) override {
    if (count <= 0) return {};
    begin();
    nccl_check(ncclBroadcast(buf, buf, static_cast<std::size_t>(count), nccl_type(dtype), root, comm_, stream_),
               "ncclBroadcast");
    finish("broadcast");
    return ring_chain_traffic(count * dtype_size_bytes(dtype), world_, rank_, root, false);
  }

  Traffic send(const void* buf, std::int64_t bytes, int peer) override {
    if (bytes <= 0) return {};
    begin();
    nccl_check(ncclSend(buf, static_cast<std::size_t>(bytes), ncclInt8, peer, comm_, stream_), "ncclSend");
    finish("send");
    return {bytes, 0};
  }

  Traffic recv(void* buf, std::int64_t bytes, int peer) override {
    if (bytes <= 0) return {};
    begin();
    nccl_check(ncclRecv(buf, static_cast<std::size_t>(bytes), ncclInt8, peer, comm_, stream_), "ncclRecv");
    finish("recv");
    return {0, bytes};
  }

  // ncclReduceScatter needs equal, contiguous shards: used in place when they are, otherwise
  // through a padded staging buffer (world x largest shard).
  Traffic reduce_scatter(void* base, const std::vector<Segment>& shards, DType dtype, ReduceOp op) override {
    const std::int64_t es = dtype_size_bytes(dtype);
    auto* b = static_cast<char*>(base);
    std::int64_t c = 0;
    const bool even = uniform(shards, &c);
    if (c == 0 && even) return {};
    begin();
    if (even) {
      char* start = b + shards[0].offset * es;
      nccl_check(ncclReduceScatter(start, start + rank_ * c * es, static_cast<std::size_t>(c), nccl_type(dtype),
                                   nccl_op(op), comm_, stream_),
                 "ncclReduceScatter");
    } else {
      const std::int64_t m = max_count(shards);
      char* st = staging(static_cast<std::size_t>(m * es * world_));
      for (int r = 0; r < world_; ++r) {
        const auto& s = shards[static_cast<std::size_t>(r)];
        copy_on_stream(st + r * m * es, b + s.offset * es, s.count * es);
      }
      nccl_check(ncclReduceScatter(st, st + rank_ * m * es, static_cast<std::size_t>(m), nccl_type(dtype), nccl_op(op),
                                   comm_, stream_),
                 "ncclReduceScatter");
      const auto& own = shards[static_cast<std::size_t>(rank_)];
      copy_on_stream(b + own.offset * es, st + rank_ * m * es, own.count * es);
      c = m;
    }
    finish("reduce_scatter");
    const std::int64_t moved = (world_ - 1) * c * es;
    return {moved, moved};
  }

  Traffic allgather(void* base, const std::vector<Segment>& shards, DType dtype) override {
    const std::int64_t es = dtype_size_bytes(dtype);
    auto* b = static_cast<char*>(base);
    std::int64_t c = 0;
    const bool even = uniform(shards, &c);
    if (c == 0 && even) return {};
    begin();
    if (even) {
      char* start = b + shards[0].offset * es;
      nccl_check(ncclAllGather(start + rank_ * c * es, start, static_cast<std::size_t>(c), nccl_type(dtype), comm_, stream_),
                 "ncclAllGather");
    } else {
      const std::int64_t m = max_count(shards);
      char* st = staging(static_cast<std::size_t>(m * es * world_));
      const auto& own = shards[static_cast<std::size_t>(rank_)];
      copy_on_stream(st + rank_ * m * es, b + own.offset * es, own.count * es);
      nccl_check(ncclAllGather(st + rank_ * m * es, st, static_cast<std::size_t>(m), nccl_type(dtype), comm_, stream_),
                 "ncclAllGather");
      for (int r = 0; r < world_; ++r) {
        const auto& s = shards[static_cast<std::size_t>(r)];
        copy_on_stream(b + s.offset * es, st + r * m * es, s.count * es);
      }
      c = m;
    }
    finish("allgather");
    const std::int64_t moved = (world_ - 1) * c * es;
    return {moved, moved};
  }

  // A one-element allreduce, used as the step barrier.
  void barrier() {
    if (world_ == 1) return;
    begin();
    char* st = staging(sizeof(float));
    nccl_check(ncclAllReduce(st, st, 1, ncclFloat32, ncclSum, comm_, stream_), "ncclAllReduce (barrier)");
    finish("step barrier");
  }

 private:
  static bool uniform(const std::vector<Segment>& shards, std::int64_t* count) {
    *count = shards.empty() ? 0 : shards[0].count;
    for (std::size_t r = 0; r < shards.size(); ++r)
      if (shards[r].count != *count || shards[r].offset != shards[0].offset + static_cast<std::int64_t>(r) * *count)
        return false;
    return true;
  }
  static std::int64_t max_count(const std::vector<Segment>& shards) {
    std::int64_t m = 0;
    for (const auto& s : shards) m = std::max(m, s.count);
    return m;
  }
  // A device-to-device copy on the collectives' stream (shards staged for uneven collectives).
  void copy_on_stream(char* dst, const char* src, std::int64_t bytes) {
    if (bytes <= 0) return;
    cuda_check(cudaMemcpyAsync(dst, src, static_cast<std::size_t>(bytes), cudaMemcpyDeviceToDevice, stream_),
               "cudaMemcpyAsync");
  }

  char* staging(std::size_t bytes) {
    if (bytes > staging_bytes_) {
      if (staging_ != nullptr) cuda_check(cudaFree(staging_), "cudaFree");
      cuda_check(cudaMalloc(&staging_, bytes), "cudaMalloc (staging)");
      staging_bytes_ = bytes;
    }
    return static_cast<char*>(staging_);
  }
  void begin() {
    if (aborted_) throw CollectiveAborted("NCCL communicator was aborted by an earlier failure");
    cuda_check(cudaSetDevice(device_), "cudaSetDevice");
  }
  // Waits for the stream, watching NCCL's asynchronous errors and the timeout.
  void finish(const char* what) {
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    for (;;) {
      const cudaError_t e = cudaStreamQuery(stream_);
      if (e == cudaSuccess) return;
      if (e != cudaErrorNotReady) cuda_check(e, what);
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(comm_, &async);
      if (async != ncclSuccess && async != ncclInProgress) {
        abort();
        throw CollectiveAborted(std::string(what) + ": NCCL reported " + ncclGetErrorString(async));
      }
      if (std::chrono::steady_clock::now() > deadline) {
        abort();
        throw CollectiveAborted(std::string(what) + ": timed out after " + std::to_string(timeout_.count() / 1000.0) +
                                " s (a peer failed or stalled)");
      }
      std::this_thread::yield();
    }
  }
  void abort() {
    if (!aborted_) ncclCommAbort(comm_);
    aborted_ = true;
  }

  ncclComm_t comm_;
  int device_, rank_, world_;
  std::chrono::milliseconds timeout_;
  cudaStream_t stream_{};
  void* staging_ = nullptr;
  std::size_t staging_bytes_ = 0;
  bool aborted_ = false;
};

class NcclBackend final : public Backend {
 public:
  NcclBackend(gloo::rendezvous::Store& store, int rank, int world, const NcclOptions& o)
      : store_(store), rank_(rank), world_(world), options_(o) {
    std::string why;
    const int n = cuda_device_count(&why);
    if (n <= 0) throw BackendUnavailable("the NCCL backend needs a CUDA device: " + why);
    device_ = options_.local_rank % n;
    cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    control_ = create("control");
  }

  std::string_view name() const override { return "nccl"; }
  std::string description() const override {
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, device_);
    return "NCCL " + std::to_string(nccl_version_code()) + " on CUDA device " + std::to_string(device_) + " (" +
           prop.name + ")";
  }
  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  std::unique_ptr<Communicator> make_communicator(const std::string& name) override { return create(name); }
  void barrier() override { control_->barrier(); }

  void* allocate(std::size_t bytes) override {
    cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    void* p = nullptr;
    cuda_check(cudaMalloc(&p, std::max<std::size_t>(bytes, 1)), "cudaMalloc");
    return p;
  }
  void release(void* p, std::size_t) override {
    cudaSetDevice(device_);
    cudaFree(p);
  }
  bool host_accessible() const override { return false; }
  void copy_to_buffer(void* dst, const void* src, std::size_t bytes) override {
    cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    cuda_check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy (fill)");
  }
  void copy_from_buffer(void* dst, const void* src, std::size_t bytes) override {
    cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    cuda_check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy (verify)");
  }
  std::int64_t memory_budget_bytes(int) const override {
    std::size_t free_b = 0, total_b = 0;
    cudaSetDevice(device_);
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) return 0;
    return static_cast<std::int64_t>(static_cast<double>(free_b) * 0.75);
  }
  bool avg_is_exact() const override { return false; }

 private:
  std::unique_ptr<NcclCommunicator> create(const std::string& name) {
    const ncclUniqueId id = bootstrap_id(store_, name, rank_);
    cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    ncclComm_t comm = nullptr;
    nccl_check(ncclCommInitRank(&comm, world_, id, rank_), ("ncclCommInitRank for " + name).c_str());
    return std::make_unique<NcclCommunicator>(comm, device_, rank_, world_, options_.timeout);
  }

  gloo::rendezvous::Store& store_;
  int rank_, world_;
  NcclOptions options_;
  int device_ = 0;
  std::unique_ptr<NcclCommunicator> control_;
};

}  // namespace

int cuda_device_count(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why != nullptr) *why = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e);
    return -1;
  }
  if (n == 0 && why != nullptr) *why = "cudaGetDeviceCount found no CUDA device";
  return n;
}

int nccl_version_code() {
  int v = 0;
  ncclGetVersion(&v);
  return v;
}

std::unique_ptr<Backend> make_nccl_backend(gloo::rendezvous::Store& store, int rank, int world_size,
                                           const NcclOptions& options) {
  return std::make_unique<NcclBackend>(store, rank, world_size, options);
}

}  // namespace redsim::realexec
