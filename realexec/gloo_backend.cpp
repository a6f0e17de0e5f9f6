#include "realexec/gloo_backend.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>

#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/types.h>

#include "collectives/shapes.h"
#include "core/pipeline.h"
#include "realexec/memory_budget.h"
#include "realexec/reduce_kernels.h"
#include "realexec/traffic.h"

namespace redsim::realexec {
namespace {

constexpr std::uint8_t kReduceScatterSlotPrefix = 0x70;  // clear of Gloo's own prefixes (0x01..0x08)
constexpr std::uint8_t kAllgatherRingSlotPrefix = 0x71;
constexpr std::uint8_t kChainSlotPrefix = 0x72;
// Point-to-point uses one fixed slot: only two ranks take part, so the per-collective tags (which
// every rank advances together) cannot be used; one pair delivers in order.
constexpr std::uint8_t kPointToPointSlotPrefix = 0x73;

std::size_t elem_size(DType t) { return static_cast<std::size_t>(dtype_size_bytes(t)); }

// Runs a Gloo call; transport failures (peer closed, timeout) become CollectiveAborted.
template <class F>
void guarded(const char* what, F&& f) {
  try {
    f();
  } catch (const gloo::IoException& e) {
    throw CollectiveAborted(std::string(what) + ": " + e.what());
  } catch (const gloo::Exception& e) {
    const std::string msg = e.what();
    if (msg.find("Timed out") != std::string::npos || msg.find("closed") != std::string::npos ||
        msg.find("Connection") != std::string::npos)
      throw CollectiveAborted(std::string(what) + ": " + msg);
    throw;
  }
}

void wait_recv(gloo::transport::UnboundBuffer& b, std::chrono::milliseconds timeout, const char* what) {
  bool ok = true;
  guarded(what, [&] { ok = b.waitRecv(timeout); });
  if (!ok) throw CollectiveAborted(std::string(what) + ": receive aborted");
}

void wait_send(gloo::transport::UnboundBuffer& b, std::chrono::milliseconds timeout, const char* what) {
  bool ok = true;
  guarded(what, [&] { ok = b.waitSend(timeout); });
  if (!ok) throw CollectiveAborted(std::string(what) + ": send aborted");
}

std::shared_ptr<gloo::transport::Device> make_device(const GlooOptions& o) {
  gloo::transport::tcp::attr attr;
  if (!o.iface.empty())
    attr.iface = o.iface;
  else if (!o.hostname.empty())
    attr.hostname = o.hostname;
  return gloo::transport::tcp::CreateDevice(attr);
}

std::shared_ptr<gloo::Context> connect(gloo::rendezvous::Store& store, const std::string& name, int rank, int world,
                                       const GlooOptions& o) {
  gloo::rendezvous::PrefixStore prefixed("redsim/gloo/" + name, store);
  auto device = make_device(o);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, world);
  ctx->setTimeout(o.timeout);
  guarded("connecting Gloo communicator", [&] { ctx->connectFullMesh(prefixed, device); });
  return ctx;
}

class GlooCommunicator final : public Communicator {
 public:
  GlooCommunicator(std::shared_ptr<gloo::Context> ctx, std::chrono::milliseconds timeout)
      : ctx_(std::move(ctx)), timeout_(timeout) {}

  Traffic allreduce(void* buf, std::int64_t count, DType dtype, ReduceOp op) override {
    const int n = ctx_->size;
    if (count <= 0 || n == 1) return {};
    gloo::AllreduceOptions o(ctx_);
    set_output(o, buf, count, dtype);
    o.setReduceFunction(reduce_function(dtype, op));
    o.setTag(next_tag());
    o.setTimeout(timeout_);
    guarded("allreduce", [&] { gloo::allreduce(o); });
    if (op == ReduceOp::avg) scale_avg(buf, static_cast<std::size_t>(count), dtype, n);
    return ring_allreduce_traffic(count * dtype_size_bytes(dtype), n, ctx_->rank);
  }

  // Reduce and broadcast run as the simulator models them (after NCCL), not as gloo::reduce
  // (ring reduce-scatter + gather) or gloo::broadcast (binomial tree): a chain along the ring,
  // pipelined in chunks of kPipelineChunkBytes. Reduce flows toward the root (root+1 is the head,
  // the root the tail); broadcast flows from it.
  Traffic reduce(void* buf, std::int64_t count, DType dtype, ReduceOp op, int root) override {
    const int n = ctx_->size;
    if (count <= 0 || n == 1) return {};
    const Traffic t = chain(buf, count, dtype, reduce_function(dtype, op), root, true);
    if (op == ReduceOp::avg && ctx_->rank == root) scale_avg(buf, static_cast<std::size_t>(count), dtype, n);
    return t;
  }

  Traffic broadcast_binomial(void* buf, std::int64_t count, DType dtype, int root) override {
    const int n = ctx_->size;
    if (count <= 0 || n == 1) return {};
    gloo::BroadcastOptions o(ctx_);
    set_output(o, buf, count, dtype);
    o.setRoot(root);
    o.setTag(next_tag());
    o.setTimeout(timeout_);
    guarded("broadcast", [&] { gloo::broadcast(o); });
    // Each rank receives the buffer once (the root not at all) and sends it to each child.
    const std::int64_t bytes = count * dtype_size_bytes(dtype);
    const auto kids = static_cast<std::int64_t>(binomial_peers(n, root, ctx_->rank).children.size());
    return {kids * bytes, ctx_->rank == root ? 0 : bytes};
  }

  Traffic broadcast(void* buf, std::int64_t count, DType dtype, int root) override {
    if (count <= 0 || ctx_->size == 1) return {};
    return chain(buf, count, dtype, {}, root, false);
  }

  // Ring reduce-scatter over arbitrary shards: in step k rank r sends its partial of shard
  // r-k-1 to r+1 and reduces shard r-k-2 received from r-1; after N-1 steps shard r is complete.
  Traffic reduce_scatter(void* base, const std::vector<Segment>& shards, DType dtype, ReduceOp op) override {
    const int n = ctx_->size, r = ctx_->rank;
    const std::size_t es = elem_size(dtype);
    Traffic t;
    if (n > 1) {
      const auto fn = reduce_function(dtype, op);
      std::int64_t max_count = 0, extent = 0;
      for (const auto& s : shards) {
        max_count = std::max(max_count, s.count);
        extent = std::max(extent, s.offset + s.count);
      }
      if (extent == 0) return {};
      tmp_.resize(static_cast<std::size_t>(max_count) * es);
      auto data = ctx_->createUnboundBuffer(base, static_cast<std::size_t>(extent) * es);
      auto recv = ctx_->createUnboundBuffer(tmp_.data(), std::max<std::size_t>(tmp_.size(), 1));
      const auto slot = gloo::Slot::build(kReduceScatterSlotPrefix, next_tag());
      const int next = (r + 1) % n, prev = (r + n - 1) % n;
      auto* bytes = static_cast<char*>(base);
      for (int k = 0; k < n - 1; ++k) {
        const Segment& snd = shards[static_cast<std::size_t>(((r - k - 1) % n + n) % n)];
        const Segment& rcv = shards[static_cast<std::size_t>(((r - k - 2) % n + n) % n)];
        if (rcv.count > 0) guarded("reduce_scatter", [&] { recv->recv(prev, slot, 0, static_cast<std::size_t>(rcv.count) * es); });
        if (snd.count > 0)
          guarded("reduce_scatter", [&] {
            data->send(next, slot, static_cast<std::size_t>(snd.offset) * es, static_cast<std::size_t>(snd.count) * es);
          });
        if (rcv.count > 0) {
          wait_recv(*recv, timeout_, "reduce_scatter");
          char* dst = bytes + static_cast<std::size_t>(rcv.offset) * es;
          fn(dst, dst, tmp_.data(), static_cast<std::size_t>(rcv.count));
          t.bytes_received += rcv.count * static_cast<std::int64_t>(es);
        }
        if (snd.count > 0) {
          wait_send(*data, timeout_, "reduce_scatter");
          t.bytes_sent += snd.count * static_cast<std::int64_t>(es);
        }
      }
    }
    const Segment& own = shards[static_cast<std::size_t>(r)];
    if (op == ReduceOp::avg && own.count > 0)
      scale_avg(static_cast<char*>(base) + static_cast<std::size_t>(own.offset) * es, static_cast<std::size_t>(own.count),
                dtype, n);
    return t;
  }

  Traffic send(const void* buf, std::int64_t bytes, int peer) override {
    if (bytes <= 0) return {};
    // Gloo's unbound buffers take a non-const pointer; a send only reads it.
    auto b = ctx_->createUnboundBuffer(const_cast<void*>(buf), static_cast<std::size_t>(bytes));
    guarded("send", [&] { b->send(peer, gloo::Slot::build(kPointToPointSlotPrefix, 0)); });
    wait_send(*b, timeout_, "send");
    return {bytes, 0};
  }

  Traffic recv(void* buf, std::int64_t bytes, int peer) override {
    if (bytes <= 0) return {};
    auto b = ctx_->createUnboundBuffer(buf, static_cast<std::size_t>(bytes));
    guarded("recv", [&] { b->recv(peer, gloo::Slot::build(kPointToPointSlotPrefix, 0)); });
    wait_recv(*b, timeout_, "recv");
    return {0, bytes};
  }

  // Ring allgather: in step k rank r forwards shard r-k to r+1 and receives shard r-k-1 in place.
  Traffic allgather(void* base, const std::vector<Segment>& shards, DType dtype) override {
    const int n = ctx_->size, r = ctx_->rank;
    if (n == 1) return {};
    const std::size_t es = elem_size(dtype);
    std::int64_t extent = 0;
    for (const auto& s : shards) extent = std::max(extent, s.offset + s.count);
    if (extent == 0) return {};
    auto out = ctx_->createUnboundBuffer(base, static_cast<std::size_t>(extent) * es);
    auto in = ctx_->createUnboundBuffer(base, static_cast<std::size_t>(extent) * es);
    const auto slot = gloo::Slot::build(kAllgatherRingSlotPrefix, next_tag());
    const int next = (r + 1) % n, prev = (r + n - 1) % n;
    Traffic t;
    for (int k = 0; k < n - 1; ++k) {
      const Segment& snd = shards[static_cast<std::size_t>(((r - k) % n + n) % n)];
      const Segment& rcv = shards[static_cast<std::size_t>(((r - k - 1) % n + n) % n)];
      if (rcv.count > 0)
        guarded("allgather", [&] {
          in->recv(prev, slot, static_cast<std::size_t>(rcv.offset) * es, static_cast<std::size_t>(rcv.count) * es);
        });
      if (snd.count > 0)
        guarded("allgather", [&] {
          out->send(next, slot, static_cast<std::size_t>(snd.offset) * es, static_cast<std::size_t>(snd.count) * es);
        });
      if (rcv.count > 0) {
        wait_recv(*in, timeout_, "allgather");
        t.bytes_received += rcv.count * static_cast<std::int64_t>(es);
      }
      if (snd.count > 0) {
        wait_send(*out, timeout_, "allgather");
        t.bytes_sent += snd.count * static_cast<std::int64_t>(es);
      }
    }
    return t;
  }

 private:
  // One pipelined chain (see reduce): every recv is posted up front (into tmp_ for a reduce, in
  // place for a broadcast); chunk k is forwarded as soon as it has arrived (and been reduced).
  Traffic chain(void* buf, std::int64_t count, DType dtype, const ReduceFn& fn, int root, bool toward_root) {
    const int n = ctx_->size, r = ctx_->rank;
    const std::size_t es = elem_size(dtype);
    const int i = ((r - root - (toward_root ? 1 : 0)) % n + n) % n;  // index along the chain
    const bool has_prev = i > 0, has_next = i < n - 1;
    const int chunks = pipeline_chunks(count * static_cast<std::int64_t>(es));
    auto* bytes = static_cast<char*>(buf);
    auto data = ctx_->createUnboundBuffer(buf, static_cast<std::size_t>(count) * es);
    std::unique_ptr<gloo::transport::UnboundBuffer> recv;
    if (has_prev && toward_root) {
      tmp_.resize(static_cast<std::size_t>(count) * es);
      recv = ctx_->createUnboundBuffer(tmp_.data(), tmp_.size());
    }
    gloo::transport::UnboundBuffer& in = recv ? *recv : *data;
    const auto slot = gloo::Slot::build(kChainSlotPrefix, next_tag());
    const int prev = (r + n - 1) % n, next = (r + 1) % n;
    const auto off = [&](int k) { return static_cast<std::size_t>(split_offset(count, chunks, k)) * es; };
    const auto len = [&](int k) { return static_cast<std::size_t>(split_piece(count, chunks, k)) * es; };
    if (has_prev)
      for (int k = 0; k < chunks; ++k) guarded("chain", [&] { in.recv(prev, slot, off(k), len(k)); });
    for (int k = 0; k < chunks; ++k) {
      if (has_prev) {
        wait_recv(in, timeout_, "chain");  // one pair delivers in order: this is chunk k
        if (toward_root) fn(bytes + off(k), bytes + off(k), tmp_.data() + off(k), len(k) / es);
      }
      if (has_next) guarded("chain", [&] { data->send(next, slot, off(k), len(k)); });
    }
    if (has_next)
      for (int k = 0; k < chunks; ++k) wait_send(*data, timeout_, "chain");
    return ring_chain_traffic(count * static_cast<std::int64_t>(es), n, r, root, toward_root);
  }

  // Gloo only needs the element size (the reduce function knows the type).
  template <class Options>
  static void set_output(Options& o, void* buf, std::int64_t count, DType dtype) {
    const auto n = static_cast<std::size_t>(count);
    switch (elem_size(dtype)) {
      case 1:
        o.setOutput(static_cast<std::uint8_t*>(buf), n);
        return;
      case 2:
        o.setOutput(static_cast<std::uint16_t*>(buf), n);
        return;
      case 4:
        o.setOutput(static_cast<float*>(buf), n);
        return;
      default:
        o.setOutput(static_cast<std::uint64_t*>(buf), n);
        return;
    }
  }
  std::uint32_t next_tag() { return tag_++; }

  std::shared_ptr<gloo::Context> ctx_;
  std::chrono::milliseconds timeout_;
  std::uint32_t tag_ = 0;
  std::vector<char> tmp_;
};

class GlooBackend final : public Backend {
 public:
  GlooBackend(gloo::rendezvous::Store& store, int rank, int world, GlooOptions o)
      : store_(store), rank_(rank), world_(world), options_(std::move(o)) {
    control_ = connect(store_, "control", rank_, world_, options_);
  }

  std::string_view name() const override { return "gloo"; }
  std::string description() const override {
    return "Gloo over TCP (" +
           (options_.iface.empty() ? (options_.hostname.empty() ? std::string("this host's address") : options_.hostname)
                                   : "interface " + options_.iface) +
           ")";
  }
  int rank() const override { return rank_; }
  int world_size() const override { return world_; }

  std::unique_ptr<Communicator> make_communicator(const std::string& name) override {
    return std::make_unique<GlooCommunicator>(connect(store_, name, rank_, world_, options_), options_.timeout);
  }

  std::unique_ptr<Communicator> make_group_communicator(const std::string& name, const std::vector<int>& members) override {
    const auto me = std::find(members.begin(), members.end(), rank_);
    if (me == members.end()) throw std::logic_error("a group communicator without this rank");
    // The group's lowest rank names its rendezvous, so groups with one name never meet.
    const std::string key = name + ".group" + std::to_string(*std::min_element(members.begin(), members.end()));
    return std::make_unique<GlooCommunicator>(
        connect(store_, key, static_cast<int>(me - members.begin()), static_cast<int>(members.size()), options_),
        options_.timeout);
  }

  void barrier() override {
    if (world_ == 1) return;
    gloo::BarrierOptions o(control_);
    o.setTag(barrier_tag_++);
    o.setTimeout(options_.timeout);
    guarded("step barrier", [&] { gloo::barrier(o); });
  }

  void* allocate(std::size_t bytes) override {
    const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + 4095) / 4096 * 4096;
    void* p = std::aligned_alloc(4096, rounded);
    if (p == nullptr) throw std::bad_alloc();
    std::memset(p, 0, rounded);  // touch every page now, not inside the first timed step
    return p;
  }
  void release(void* p, std::size_t) override { std::free(p); }
  bool host_accessible() const override { return true; }
  void copy_to_buffer(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
  void copy_from_buffer(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
  std::int64_t memory_budget_bytes(int ranks_on_host) const override {
    auto avail = mem_available_bytes().value_or(std::int64_t{8} * 1024 * 1024 * 1024);
    // Test-only: pretend the machine has this much memory available (exercises --buffer-scale auto).
    if (const char* v = std::getenv("REDSIM_TEST_MEM_AVAILABLE_BYTES")) avail = std::atoll(v);
    return static_cast<std::int64_t>(static_cast<double>(avail) * kMemoryHeadroomFraction /
                                     std::max(1, ranks_on_host));
  }

 private:
  gloo::rendezvous::Store& store_;
  int rank_, world_;
  GlooOptions options_;
  std::shared_ptr<gloo::Context> control_;
  std::uint32_t barrier_tag_ = 0;
};

}  // namespace

std::unique_ptr<Backend> make_gloo_backend(gloo::rendezvous::Store& store, int rank, int world_size,
                                           const GlooOptions& options) {
  return std::make_unique<GlooBackend>(store, rank, world_size, options);
}

}  // namespace redsim::realexec
