// The collective model both fidelities share: which algorithm, protocol and channel count each
// collective of a Plan runs (NCCL's choice on an `nccl` cluster, the knobs' on an `ideal` one),
// and how that choice moves bytes: the protocol's payload efficiency, per-step synchronisation
// latency, per-channel throughput, chunking and base latency (collectives/README.md).
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "collectives/nccl_constants.h"
#include "core/cluster.h"
#include "core/plan.h"

namespace redsim {

// Fills op.algorithm, op.protocol and op.channels from op.request for every collective of the
// plan. Throws InputError for a request the cluster cannot run (NVLS without NVLS hardware, ...).
void choose_collectives(Plan& plan, const ClusterSpec& cluster);
// How an op's avg reaches NCCL. A Plan's avg is a framework's average, which the frameworks
// redsim models compute as a sum of pre-divided gradients (PyTorch DDP's reducer and FSDP's
// divide factors, Horovod's prescale, DeepSpeed's predivide, model averaging's division), so
// NCCL ranks a sum's choices (NVLS included); nccl-tests' -o avg calls ncclAvg, which NVLS does
// not reduce (nccl_tuning.h nvls_reduces).
enum class AvgAs { framework_sum, nccl_avg };
void choose_collective(PlanOp& op, const ClusterSpec& cluster, AvgAs avg = AvgAs::framework_sum);

// How one collective channel moves its bytes.
struct Mechanics {
  double wire_factor = 1.0;  // bytes on the wire per payload byte
  // Synchronisation latency per step (one slice crossing one hop), by hop class (NVLink, PCI,
  // network): a step costs at least this, whatever the link's own latency. 0: the link's only.
  std::array<double, 3> hop_latency_s{};
  double base_latency_s = 0;  // once per collective, before the first step
  double channel_cap_Bps = 0;  // payload a channel moves per second at most (0: the links decide)
  // A Simple ring across nodes (sync_hop_cap_Bps > 0; 0 otherwise): channel_cap_Bps (the bus
  // bandwidth a channel, across nodes the network's share) paces its network hops only; its
  // NVLink and PCIe hops copy a slice at sync_hop_cap_Bps, the channel's share of the device's
  // link and never less than the cap.
  // Held to the network's rate, each slice's synchronisation on those hops came on top of a
  // copy as long as the network's, slice after slice: HKBU's 10 GbE ring 27% slow at 1-2 MiB
  // (bench/fidelity/README.md, "Rings across nodes with Simple").
  double sync_hop_cap_Bps = 0;
  // The cap a hop of class `hw` is held to (0: none), and a payload's time at it.
  bool sync_hop_capped(nccl::Hw hw) const { return sync_hop_cap_Bps > 0 && hw != nccl::Hw::net; }
  double hop_cap_Bps(nccl::Hw hw) const { return sync_hop_capped(hw) ? sync_hop_cap_Bps : channel_cap_Bps; }
  double hop_cap_time_s(nccl::Hw hw, std::int64_t payload, int steps = 1) const {
    // Simple, the only protocol with a synchronous hops' cap, has no passes to round to.
    return sync_hop_capped(hw) ? static_cast<double>(payload) / sync_hop_cap_Bps : cap_time_s(payload, steps);
  }
  // A ring step of LL or LL128 runs as whole passes of the channel's threads, each pass moving
  // this much payload (LL: 8 bytes a thread; LL128: 1,920 bytes a warp), however little of it
  // the step fills (2.18.5 prims_ll.h and prims_ll128.h GenericOp). 0: no passes (Simple, chains,
  // trees, NVLS, ideal collectives).
  std::int64_t pass_bytes = 0;
  // The time `steps` steps carrying `payload` bytes in all take at the channel's cap, each step
  // rounded up to whole passes. 0 without a cap.
  double cap_time_s(std::int64_t payload, int steps = 1) const;
  // Payload a channel moves per step; a collective larger than channels x ranks x chunk runs in
  // several loops of steps. 0: one loop (ideal collectives).
  std::int64_t chunk_bytes = 0;
  int slices = 1;  // synchronisations per chunk (Simple ring: 2)
  // NVLS allreduce before NCCL 2.20: each loop gives channel c the block of heads x chunk at
  // c x heads x chunk, so a small buffer runs on its first channels only, and on its first heads
  // (2.18.5 src/collectives/device/all_reduce.h, the NVLS kernel's bid*nHeads*chunkSize). From
  // 2.20 (src/device/all_reduce.h, workCount per channel) the buffer is split over the channels.
  bool nvls_block_layout = false;
  // LL and LL128 along a chain or tree: the payload a sender may have in flight ahead of its
  // receiver (NCCL_STEPS steps of the protocol's buffer), so later pieces follow the first at the
  // channel's pace instead of a route latency apart. 0: a piece waits for the previous one.
  std::int64_t stream_window_bytes = 0;
  // The payload a network hop of such a stream carries as one message: NCCL's proxy sends an LL
  // or LL128 step once all its lines have arrived (2.18.5 src/transport/net.cc,
  // sendProxyProgress), a step being the protocol's step payload or the channel's chunk when
  // the channel has less. 0: no grouping.
  std::int64_t stream_net_step_bytes = 0;
  bool streams() const { return stream_window_bytes > 0; }
  // Pieces of `piece_bytes` one message carries on a hop: a step's worth on a network hop of a
  // stream, else 1. Both fidelities group by this.
  int stream_group(bool network_hop, std::int64_t piece_bytes) const;
  // How an NCCL allreduce ring shares its buffer among channels (0: evenly): pieces rounded to
  // multiples of `ring_grain_elems` elements of `elem_bytes`, laid chunk by chunk over the
  // channels (LL, LL128). See ring_allreduce_chunks.
  std::int64_t ring_grain_elems = 0;
  int elem_bytes = 0;
  // Seconds to reduce one incoming byte into the local buffer (device reduce_GBps for the op's
  // element type; 0: free).
  double reduce_s_per_byte = 0;
  double hop_latency(nccl::Hw hw) const { return hop_latency_s[static_cast<std::size_t>(hw)]; }
  // Pipeline chunks of a chain or tree channel carrying `bytes`: the protocol's chunk, or 512 KiB
  // pieces for ideal collectives (core/pipeline.h).
  int chunks(std::int64_t bytes) const;
};

Mechanics mechanics_of(const PlanOp& op, const ClusterSpec& cluster, int world);

// NVLS (NVLink SHARP) allreduce of one channel's `bytes` inside a node of `heads` devices, in
// loops of heads x chunk: in a loop each device's slice is read by the switch, which reduces it
// and returns each device its own piece (slice / heads); each device then stores its piece
// once more and the switch multicasts it to every device. Per loop a device sends and receives
// slice + piece.
int nvls_loops(const Mechanics& m, std::int64_t bytes, int heads);
std::int64_t nvls_slice(std::int64_t bytes, int loops, int loop);
inline std::int64_t nvls_piece(std::int64_t slice, int heads, int head) {
  return slice / heads + (head < slice % heads ? 1 : 0);
}
// A channel runs three warp groups as a pipeline (NCCL 2.18.5 and 2.20.5 all_reduce.h, the NVLS
// kernel: scatter copies the input into the switch's buffers, reduce loads-reduces and
// multicast-stores, gather copies the result out; 6, 5 and 5 warps for 8 ranks), so a loop
// passes three stages. Only the reduce stage crosses NVLink; the copy stages are taken to keep
// its pace (the warps are split among the stages for that), so the pipeline is loops + 2 steps:
// step 0 is loop 0's scatter and step loops + 1 loop loops-1's gather, each as long as that
// loop's reduce stage (`counted` false: its bytes pace the step but are not traffic), and step
// k in between is loop k-1's reduce stage.
struct NvlsStep {
  std::int64_t bytes = 0;  // payload the device sends, and as much it receives (slice + piece)
  bool counted = true;
  std::int64_t slice_bytes = 0;  // the loop's slice: what the channel's throughput cap paces
};
inline int nvls_steps(int loops) { return loops + 2; }
// Every step of channel `channel` of an NVLS allreduce of `op_bytes` for the device that is head
// `head`, in the layout m says (nvls_block_layout); empty for a channel that gets no bytes. Both
// fidelities run these. A step lasts at least slice_bytes / m.channel_cap_Bps.
std::vector<NvlsStep> nvls_channel_steps(const Mechanics& m, std::int64_t op_bytes, int channels, int channel,
                                         int heads, int head);

// The bytes of each ring position's chunk in channel `channel` of a ring allreduce of `bytes` over
// `n` ranks, `channels` channels. With LL and LL128 NCCL (2.18.5 all_reduce.h runRing) rounds a
// chunk up to a grain of its threads' work (LL 8 bytes a thread, LL128 30) and lays the pieces
// out chunk by chunk over the channels, so a buffer of fewer than channels x ranks grains loads
// the first channels with one piece more: LL128 at 2 MiB on 24 channels of 8 ranks gives
// channels 0-12 five 19,200-byte pieces and the rest four (96,000 against 76,800 bytes; 87,381
// each if even). The channel gets its share as NCCL lays it out, split evenly over the
// positions (a step streams line by line, so which step carries a byte matters less than how
// many a link carries). Simple, a buffer of several loops and an ideal collective are split
// evenly (collectives/README.md says why).
std::vector<std::int64_t> ring_allreduce_chunks(const Mechanics& m, std::int64_t bytes, int channels, int channel, int n);

// Bytes on the wire for `payload` bytes (LL doubles them, LL128 adds 1/15); both fidelities
// convert a rank's payload for an op once, so that they count alike.
std::int64_t wire_bytes(const Mechanics& m, std::int64_t payload);

}  // namespace redsim
