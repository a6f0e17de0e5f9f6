#include "sim/ring_allreduce.h"

#include <string>
#include <vector>

#include <simgrid/s4u.hpp>

#include "sim/ring_order.h"

namespace redsim {
namespace sg4 = simgrid::s4u;

namespace {
int mod(int a, int n) { return ((a % n) + n) % n; }
char g_payload;  // SimGrid refuses a null payload; the simulated size is what counts
}  // namespace

void RingAllreduce::add_pairs(const PlanOp& op, const ClusterSpec& cluster, RankPairs& pairs) const {
  const int n = cluster.world_size();
  if (n < 2) return;
  for (int c = 0; c < op.channels; ++c) {
    auto order = ring_order(cluster, c, op.channels);
    for (int i = 0; i < n; ++i) pairs.emplace(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>((i + 1) % n)]);
  }
}

std::int64_t ring_allreduce_bytes_sent(std::int64_t channel_bytes, int n, int pos) {
  if (n < 2) return 0;
  std::int64_t sent = 2 * channel_bytes;
  sent -= split_piece(channel_bytes, n, mod(pos + 1, n));
  sent -= split_piece(channel_bytes, n, mod(pos + 2, n));
  return sent;
}

TransferTally RingAllreduce::run(const PlanOp& op, int rank, SimContext& ctx) const {
  const int n = ctx.plan.world_size;
  if (n < 2) return {};
  const int channels = op.channels;
  std::vector<TransferTally> tally(static_cast<std::size_t>(channels));

  auto channel_body = [&](int c) {
    const auto& ring = ctx.ring(c, channels);
    const int pos = ctx.ring_position(c, channels)[static_cast<std::size_t>(rank)];
    const int next = ring[static_cast<std::size_t>(mod(pos + 1, n))];
    const std::int64_t channel_bytes = split_piece(op.bytes, channels, c);
    auto* out = ctx.mailbox(op.stream, c, next);
    auto* in = ctx.mailbox(op.stream, c, rank);
    auto& t = tally[static_cast<std::size_t>(c)];
    for (int step = 0; step < 2 * (n - 1); ++step) {
      const bool scatter = step < n - 1;
      const int k = scatter ? step : step - (n - 1);
      const int send_chunk = scatter ? mod(pos - k, n) : mod(pos + 1 - k, n);
      const int recv_chunk = scatter ? mod(pos - k - 1, n) : mod(pos - k, n);
      const auto send_bytes = split_piece(channel_bytes, n, send_chunk);
      auto send = out->put_async(&g_payload, static_cast<std::uint64_t>(send_bytes));
      void* got = nullptr;
      auto recv = in->get_async(&got);
      send->wait();
      recv->wait();
      t.bytes_sent += send_bytes;
      t.bytes_received += split_piece(channel_bytes, n, recv_chunk);
    }
  };

  // Channels progress independently, as NCCL's do: one actor each (channel 0 runs here).
  std::vector<sg4::ActorPtr> helpers;
  for (int c = 1; c < channels; ++c)
    helpers.push_back(sg4::Actor::create("r" + std::to_string(rank) + "ch" + std::to_string(c),
                                         sg4::this_actor::get_host(), [&channel_body, c] { channel_body(c); }));
  channel_body(0);
  for (auto& h : helpers) h->join();

  TransferTally total;
  for (const auto& t : tally) {
    total.bytes_sent += t.bytes_sent;
    total.bytes_received += t.bytes_received;
  }
  return total;
}

}  // namespace redsim
