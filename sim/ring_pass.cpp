#include "sim/ring_pass.h"

#include <algorithm>
#include <string>

#include <simgrid/s4u.hpp>

namespace redsim {
namespace sg4 = simgrid::s4u;

namespace {
int mod(int a, int n) { return ((a % n) + n) % n; }
char g_payload;  // SimGrid refuses a null payload; the simulated size is what counts
}  // namespace

TransferTally run_ring_pass(SimContext& ctx, const PlanOp& op, int channel, const RingPass& pass) {
  const int n = static_cast<int>(pass.ring.size());
  TransferTally t;
  if (n < 2) return t;
  const int rank = pass.ring[static_cast<std::size_t>(pass.pos)];
  const int next = pass.ring[static_cast<std::size_t>(mod(pass.pos + 1, n))];
  const int prev = pass.ring[static_cast<std::size_t>(mod(pass.pos - 1, n))];
  auto* out = ctx.mailbox(op.stream, channel, static_cast<int>(pass.phase), next);
  auto* in = ctx.mailbox(op.stream, channel, static_cast<int>(pass.phase), rank);
  const int rs_steps = pass.reduce_scatter ? n - 1 : 0;
  const int steps = rs_steps + (pass.allgather ? n - 1 : 0);
  // The protocol's chunking: a chunk position carries at most chunk_bytes per loop, each step
  // is sent as `slices` synchronised pieces (collectives/collective_model.h).
  const auto& m = ctx.mechanics(op);
  const int loops = ring_loops(m, pass.chunk_bytes);
  const int slices = std::max(1, m.slices);
  for (int loop = 0; loop < loops; ++loop)
    for (int step = 0; step < steps; ++step) {
      const bool scatter = step < rs_steps;
      const int k = scatter ? step : step - rs_steps;
      const int send_chunk = scatter ? mod(pass.pos - k, n) : mod(pass.pos + 1 - k, n);
      const int recv_chunk = scatter ? mod(pass.pos - k - 1, n) : mod(pass.pos - k, n);
      const auto send_bytes = split_piece(pass.chunk_bytes[static_cast<std::size_t>(send_chunk)], loops, loop);
      const auto recv_bytes = split_piece(pass.chunk_bytes[static_cast<std::size_t>(recv_chunk)], loops, loop);
      for (int sl = 0; sl < slices; ++sl) {
        const auto sb = split_piece(send_bytes, slices, sl), rb = split_piece(recv_bytes, slices, sl);
        auto send = out->put_async(&g_payload, static_cast<std::uint64_t>(ctx.wire_bytes(m, sb)));
        void* got = nullptr;
        auto recv = in->get_async(&got);
        send->wait();
        recv->wait();
        ctx.pace_step(m, rank, next, sb, send);
        ctx.pace_step(m, prev, rank, rb, recv);
        t.bytes_sent += sb;
        t.bytes_received += rb;
        if (scatter) ctx.charge_reduction(m, rb);
      }
    }
  return t;
}

int ring_loops(const Mechanics& m, const std::vector<std::int64_t>& chunk_bytes) {
  if (m.chunk_bytes <= 0 || chunk_bytes.empty()) return 1;
  const auto largest = *std::max_element(chunk_bytes.begin(), chunk_bytes.end());
  return static_cast<int>(std::max<std::int64_t>(1, (largest + m.chunk_bytes - 1) / m.chunk_bytes));
}

std::vector<std::int64_t> chunks_for_shards(const std::vector<int>& ring, const std::vector<std::int64_t>& shard_of_rank) {
  const int n = static_cast<int>(ring.size());
  std::vector<std::int64_t> chunks(static_cast<std::size_t>(n));
  for (int j = 0; j < n; ++j)
    chunks[static_cast<std::size_t>(j)] = shard_of_rank[static_cast<std::size_t>(ring[static_cast<std::size_t>(mod(j - 1, n))])];
  return chunks;
}

std::vector<std::int64_t> op_shards(const PlanOp& op, int world) {
  if (!op.shard_bytes.empty()) return op.shard_bytes;
  // Whole elements per shard, as a real buffer is split (realexec does the same).
  const auto elem = dtype_size_bytes(op.dtype);
  std::vector<std::int64_t> s(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) s[static_cast<std::size_t>(r)] = split_piece(op.bytes / elem, world, r) * elem;
  return s;
}

TransferTally run_channels(int rank, int channels, const std::function<TransferTally(int)>& body) {
  std::vector<TransferTally> tally(static_cast<std::size_t>(channels));
  // Channels progress independently, as NCCL's do: one actor each (channel 0 runs here).
  std::vector<sg4::ActorPtr> helpers;
  for (int c = 1; c < channels; ++c)
    helpers.push_back(sg4::Actor::create("r" + std::to_string(rank) + "ch" + std::to_string(c),
                                         sg4::this_actor::get_host(),
                                         [&body, &tally, c] { tally[static_cast<std::size_t>(c)] = body(c); }));
  tally[0] = body(0);
  for (auto& h : helpers) h->join();
  TransferTally total;
  for (const auto& t : tally) {
    total.bytes_sent += t.bytes_sent;
    total.bytes_received += t.bytes_received;
  }
  return total;
}

}  // namespace redsim
