#include "sim/tree_allreduce.h"

#include <algorithm>

#include <simgrid/s4u.hpp>

#include "core/pipeline.h"
#include "sim/ring_order.h"
#include "sim/ring_pass.h"

namespace redsim {
namespace sg4 = simgrid::s4u;
namespace {
char g_payload;
}  // namespace

std::vector<int> tree_order(const ClusterSpec& cluster, int channel, int channels) {
  auto order = ring_order(cluster, channel, channels);
  if (channel % 2 == 1) std::reverse(order.begin(), order.end());
  return order;
}

void TreeAllreduce::add_pairs(const PlanOp& op, const ClusterSpec& cluster, RankPairs& pairs) const {
  for (int c = 0; c < op.channels; ++c) {
    auto order = tree_order(cluster, c, op.channels);
    for (std::size_t p = 1; p < order.size(); ++p) {
      pairs.emplace(order[p], order[(p - 1) / 2]);
      pairs.emplace(order[(p - 1) / 2], order[p]);
    }
  }
}

TransferTally TreeAllreduce::run(const PlanOp& op, int rank, SimContext& ctx) const {
  const int n = ctx.plan.world_size;
  if (n < 2) return {};
  return run_channels(rank, op.channels, [&](int c) {
    const auto order = tree_order(ctx.cluster, c, op.channels);
    const auto pos = static_cast<std::size_t>(std::find(order.begin(), order.end(), rank) - order.begin());
    const bool has_parent = pos > 0;
    const int parent = has_parent ? order[(pos - 1) / 2] : -1;
    std::vector<int> children;
    for (std::size_t k = 2 * pos + 1; k <= 2 * pos + 2 && k < order.size(); ++k) children.push_back(order[k]);
    // Left and right children send into different mailboxes, so one fast child cannot take
    // the other's turn.
    auto up_phase = [](std::size_t child_pos) {
      return static_cast<int>(child_pos % 2 == 1 ? MailPhase::tree_up : MailPhase::tree_up_right);
    };
    const std::int64_t bytes = split_piece(op.bytes, op.channels, c);
    const int chunks = pipeline_chunks(bytes);
    TransferTally t;
    std::vector<void*> got(2);

    // Up: round r receives chunk r from every child and forwards chunk r-1 (leaves send chunk r).
    const int up_rounds = chunks + (!children.empty() && has_parent ? 1 : 0);
    for (int r = 0; r < up_rounds; ++r) {
      std::vector<sg4::CommPtr> pending;
      std::int64_t received = 0;
      if (r < chunks)
        for (std::size_t k = 0; k < children.size(); ++k) {
          pending.push_back(ctx.mailbox(op.stream, c, up_phase(2 * pos + 1 + k), rank)->get_async(&got[k]));
          received += split_piece(bytes, chunks, r);
        }
      const int send_chunk = children.empty() ? r : r - 1;
      if (has_parent && send_chunk >= 0 && send_chunk < chunks) {
        const auto b = split_piece(bytes, chunks, send_chunk);
        pending.push_back(ctx.mailbox(op.stream, c, up_phase(pos), parent)->put_async(&g_payload, static_cast<std::uint64_t>(b)));
        t.bytes_sent += b;
      }
      sg4::Comm::wait_all(pending);
      t.bytes_received += received;
      ctx.charge_reduction(received);
    }
    // Down: round r receives chunk r from the parent and forwards chunk r-1 to the children
    // (the root sends chunk r).
    const int down_rounds = chunks + (!children.empty() && has_parent ? 1 : 0);
    for (int r = 0; r < down_rounds; ++r) {
      std::vector<sg4::CommPtr> pending;
      if (has_parent && r < chunks) {
        pending.push_back(ctx.mailbox(op.stream, c, static_cast<int>(MailPhase::tree_down), rank)->get_async(&got[0]));
        t.bytes_received += split_piece(bytes, chunks, r);
      }
      const int send_chunk = has_parent ? r - 1 : r;
      if (send_chunk >= 0 && send_chunk < chunks)
        for (int child : children) {
          const auto b = split_piece(bytes, chunks, send_chunk);
          pending.push_back(ctx.mailbox(op.stream, c, static_cast<int>(MailPhase::tree_down), child)
                                ->put_async(&g_payload, static_cast<std::uint64_t>(b)));
          t.bytes_sent += b;
        }
      sg4::Comm::wait_all(pending);
    }
    return t;
  });
}

}  // namespace redsim
