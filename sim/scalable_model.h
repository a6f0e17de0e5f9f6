// The scalable fidelity's collective model: what each collective becomes once its
// point-to-point steps are aggregated into long-lived flows (sim/README.md, "Scalable
// fidelity"). Plain arithmetic, no SimGrid: scalable_engine.cpp runs the flows this builds.
//
// A collective channel becomes a short sequence of *stages*. A stage is a set of flows started
// together, one per representative edge of the algorithm (a ring edge of the folded period, a
// tree edge, ...), each carrying everything its edge carries over many steps, so that flows of
// concurrent channels and collectives share links as their steps would. What the aggregation
// loses is paid as delays computed from each flow's *measured* rate:
//   - the per-step latency: a flow standing for n steps pays its route latency once in the
//     network and n-1 more times after it (a streamed pipeline's later chunks pay none:
//     rest_latencies, Stage::with_previous);
//   - the reduction time of the bytes it delivers (device reduce_GBps);
//   - the pipeline fill: with per-round times t_h, a pipeline of P chunks over hops h costs
//     (P-1) max t_h + sum over hops of t_h. Both simulate the sum as a wave of the first
//     chunk: chains hop by hop over one period, concurrent with the other channels' waves (so
//     channels share a link only when their waves meet on it, as in the exact fidelity);
//     trees edge by edge as each edge's source gets the chunk (a dataflow over the tree, whose
//     critical path is the slowest root-to-leaf path). Then the remaining P-1 chunks run as
//     one flow per edge, all edges at once. Trees beyond kMaxDataflowFlows edges are computed
//     from static fair shares instead of run as flows (see below).
#pragma once
#include <cstdint>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "core/cluster.h"
#include "collectives/collective_model.h"
#include "core/plan.h"
#include "sim/scalable_topology.h"

namespace redsim::scalable {

// Route latencies the P-1 chunks after a pipeline's first pay beyond the one in their flow: one a
// chunk when each waits for the previous (P-2 more); none when the protocol keeps several in
// flight (LL, LL128), whose stage then runs with the wave (Stage::with_previous).
inline int rest_latencies(const Mechanics& m, int P) { return m.streams() ? 0 : P - 2; }
// The payload a streamed pipeline's first (or last) chunk carries over a hop: on a network hop
// the whole step it travels in (Mechanics::stream_net_step_bytes), as sim/stream_edge.h groups
// it; `chunks` of `bytes` in all, `piece` the chunk's own bytes.
std::int64_t stream_message_bytes(const Mechanics& m, int hw, std::int64_t bytes, int chunks, std::int64_t piece, bool last);
// The time the rest of that message's chunks take at the channel's cap: the sender gathers the
// first message's before it sends it; the receiver passes the last message's on one by one.
double stream_message_extra_s(const Mechanics& m, int hw, std::int64_t bytes, int chunks, std::int64_t piece, bool last);

struct Flow {
  std::uint32_t route = 0;
  std::int64_t bytes = 0;
  int rounds = 1;             // ring steps or pipeline rounds the flow stands for
  double post_delay_s = 0;    // charged after the flow: (rounds - 1) route latencies + reduction
  double round_extra_s = 0;   // reduction per round (pipelined stages: part of the round time)
  std::int32_t group = 0;     // waves: the edge's ring position (chains) or level (trees)
  double rate_cap_Bps = 0;    // paced flows: the most bytes/s the flow may take (0: no cap)
  // The protocol (collectives/collective_model.h): each round waits at least this much beyond
  // the route's latency (NCCL's per-hop synchronisation), and the flow's transfer lasts at least
  // min_transfer_s (its payload at the channel's throughput cap).
  double hop_extra_s = 0;
  double min_transfer_s = 0;
  // Dataflow stages: the flows (indices in the stage) this one starts after, and the time its
  // source then spends (reducing) before sending, counted on the stage's critical path.
  std::int32_t after[3] = {-1, -1, -1};
  double after_extra_s = 0;
  // A with_previous stage's flow that starts when the stage before it ends, not during it: a
  // streamed chain's later steps over a network hop, which on NCCL leave one by one behind the
  // first (gathered at the channel's pace), so they never share the NIC with the first.
  bool after_wave = false;
  // Latency that overlaps the flow's transfers rather than following the flow: a ring's proxied
  // network hop (sim/ring_pass.cpp; a slice waits for the one `slices` rounds back, not for the
  // last: the flow lasts at least overlap_latency_s + a transfer / overlap_slices beyond the
  // route's latency), or a chain's or tree's later chunks (Model::overlap_rest_latencies).
  double overlap_latency_s = 0;
  int overlap_slices = 1;
  // Whether the overlapped latency adds to the transfer held to the cap (a ring's slice arrives
  // after its latency and its time at the cap) or to the transfer at the links' rate, the cap
  // bounding the whole (a chain's or tree's later chunks: the cap is the sender's pace).
  bool overlap_capped = true;
  // The latency (overlap_latency_s) and the transfer run side by side: the flow lasts the longer
  // of the two (a replayed ring, whose latency already holds its pieces' times at the cap).
  bool overlap_side_by_side = false;
};

struct Stage {
  std::vector<Flow> flows;
  // A wave: the flows run one after another (each after the previous one and its post delay),
  // as the first chunk of a chain moves hop by hop; the stage's duration counts `repeat` times
  // (a wave over one period of a folded chain stands for (N-1)/period laps).
  bool sequential = false;
  double repeat = 1;
  // A dataflow wave: each flow starts when the flows it comes after are done; the stage lasts
  // its critical path (a tree's first chunk, root to leaves or back). round_s then holds each
  // flow's arrival time from the stage's start.
  bool dataflow = false;
  // Paced: the flows stand for rounds in which every edge moves one chunk and then waits for
  // the round's slowest edge; each is capped at one chunk per round of its channel alone, with
  // the latency inside the round, so flows of channels whose rounds drift apart share a link
  // by time-averaged demand (tree channels whose bottleneck links are disjoint; see
  // sim/README.md).
  bool paced = false;
  // A computed stage (large trees): no flows, it lasts fixed_s; fixed_round_s stands for the
  // measured round_s (arrival times, for a dataflow wave).
  double fixed_s = -1;
  std::vector<double> fixed_round_s;
  // A streamed pipeline's other P-1 chunks (LL, LL128: Mechanics::stream_window_bytes): its
  // flows start with the previous stage (the wave), so their route latency passes during it,
  // and the stage ends each flow's transfer (and post delay) after the wave does: the chunks
  // trail the first at the edge's pace, none waiting a latency of its own.
  bool with_previous = false;
  // Trees: 1 = up phase, 2 = down phase; `level` is the wave's level (-1: the other P-1 chunks).
  int tree_phase = 0;
  int level = -1;
};

// One round of each flow once it ran: route latency + (duration - route latency) / rounds +
// reduction per round.
double round_time_s(const Flow& flow, double route_latency_s, double duration_s);

// What one channel's stages did in the engine.
struct ChannelRun {
  double start_s = 0;
  std::vector<double> stage_end_s;
  std::vector<std::vector<double>> round_s;  // per stage, per flow
};

// Trees with more edges than this are not run as SimGrid flows: each edge's rate comes from
// max-min sharing computed over the tree's own edges (fair_rates), and the stages' durations
// from those rates (computed stages). A heap-ordered tree has no translation symmetry to fold,
// and the engine's wait over thousands of in-flight flows costs time linear in their number
// (shared/SIMGRID_NOTES.md).
inline constexpr int kMaxDataflowFlows = 63;

struct ModelStats {
  std::int64_t stages = 0;
  std::int64_t flows = 0;
};

class Model {
 public:
  Model(const Plan& plan, const ClusterSpec& cluster, bool allow_fold);

  const Fold& fold() const { return fold_; }
  const RouteTable& routes() const { return routes_; }

  // Interns every route `op` can use (call for every collective before the platform is built).
  void prepare(const PlanOp& op);
  // The stages of one channel of a collective (none for one rank).
  std::vector<Stage> channel_stages(const PlanOp& op, int channel);
  // Each rank's end time of the channel, max-merged into end_s (size world): ring-shaped
  // collectives end together; chain and tree ranks end as their position in the pipeline says.
  void merge_rank_ends(const PlanOp& op, int channel, const std::vector<Stage>& stages, const ChannelRun& run,
                       std::vector<double>& end_s);
  // Bytes each rank sends and receives in the channel, exactly as the exact fidelity counts them.
  void add_rank_bytes(const PlanOp& op, int channel, std::vector<std::int64_t>& sent, std::vector<std::int64_t>& received);

  // Chains (reduce, broadcast) past SimOptions::chain_rank_ends_max_ranks (scalable_chain.cpp):
  // what sets the chain's duration besides the op's size and protocol (per channel, the root's
  // place in the folded period), so equal chains are simulated once; and each rank's payload
  // bytes as a default and the few ranks that differ (each channel's head sends only, its tail
  // receives only), without a pass over the ranks.
  std::vector<int> chain_shape_key(const PlanOp& op);
  struct ChainBytes {
    std::int64_t sent = 0, received = 0;  // every rank but the exceptions
    std::vector<std::pair<int, std::pair<std::int64_t, std::int64_t>>> exceptions;  // rank, (sent, received)
  };
  ChainBytes chain_rank_bytes(const PlanOp& op);
  int chain_place_spread(const PlanOp& op);

  ModelStats& stats() { return stats_; }
  // The op's protocol mechanics (cached).
  const Mechanics& mech(const PlanOp& op);

 private:
  struct WorldRing {
    std::vector<int> ring, pos;
    std::vector<std::uint32_t> routes;  // edge at ring position p -> p+1, for p in [0, period)
    // Chain waves fold onto at least two nodes: the channels' chains start up to a node apart,
    // and folded onto one node their first chunks would meet on links they never share.
    std::vector<std::uint32_t> wave_routes;
  };
  // NCCL's tree of one channel (collectives/shapes.h), by breadth-first position: position 0 is
  // the root, a parent comes before its children. Routes are unfolded (a tree has no translation
  // symmetry).
  struct Tree {
    std::vector<int> rank;                 // by position
    std::vector<int> parent;               // by position; -1 for the root
    std::vector<std::vector<int>> kids;    // by position
    // By position q >= 1: q -> parent, parent -> q. Route ids for a tree run as SimGrid flows;
    // described edges (links in edge_links) for a computed one, which no flow uses.
    std::vector<std::uint32_t> up, down;
    std::vector<EdgeLinks> up_edge, down_edge;
    std::vector<std::uint32_t> edge_links;
    std::vector<int> height, depth;        // by position: levels below it; levels above it
  };
  // A computed tree's edge rates (fair_rates over its edges): by level as the first chunk's
  // waves move, and all edges of a direction at once. They depend on the tree and the links
  // only, so they are computed once per tree, not once per collective.
  struct TreeRates {
    std::vector<double> up_level, down_level;  // by position
    std::vector<double> up_all, down_all;      // by position - 1
  };
  const TreeRates& tree_rates(const Tree& t);
  struct IntraRings {
    std::vector<std::vector<int>> rings;               // the local rings of the period's nodes
    std::vector<std::vector<std::uint32_t>> routes;    // per ring, per position
  };
  struct NodeRings {
    std::vector<std::vector<std::uint32_t>> routes;  // per local device, edge node m -> m+1, m in [0, period)
  };
  // A family of rings stepping in lockstep (same length and period), each with its chunks.
  struct RingFamily {
    int n = 0;
    int period = 0;
    std::vector<std::vector<std::int64_t>> chunks;      // per ring, per position
    std::vector<const std::vector<std::uint32_t>*> routes;  // per ring, per position in [0, period)
    bool reduce_scatter = true;
    bool allgather = true;
    const Mechanics* mech = nullptr;  // the op's protocol; each step repeats per loop and slice
    int step_factor = 1;              // loops x slices
    // A ring with network hops under NCCL's protocol (sim/ring_pass.cpp: its proxied hops):
    // what each round costs in latency along the ring, and the pipeline's fill beyond it
    // (proxied_rounds). 0: no proxied hop.
    double proxied_round_s = 0;
    double proxied_fill_s = 0;
    bool all_proxied = false;  // every hop proxied (one device a node): no synchronous hop
    // Each hop's latency a round, in ring order over the period, and the rounds it takes: a
    // synchronous hop one, a proxied one `slices` (chain_latency_s; read only when a hop is
    // proxied, proxied_round_s > 0).
    std::vector<double> hop_round_s;
    std::vector<int> hop_rounds;
    // A Simple ring with synchronous and proxied hops: the whole pass replayed
    // (scalable_ring_replay.h), which its flows last at least. 0: not replayed.
    double replay_s = 0;
    double reduce_s_per_byte() const { return mech ? mech->reduce_s_per_byte : 0.0; }
  };
  // Sets the family's proxied_round_s, proxied_fill_s and per-hop rounds from its first ring's edges.
  void proxied_rounds(RingFamily& family) const;
  // The latency of `rounds` rounds along the ring's slowest run of consecutive hops: whole laps
  // of the period, then the costliest stretch of hops that takes the remaining rounds.
  static double chain_latency_s(const RingFamily& family, int rounds);
  // The family's first ring replayed piece by piece (scalable_ring_replay.h).
  double replay_s(const RingFamily& family) const;
  // Turns a flow built for ideal collectives (payload bytes, `rounds` steps paying the route's
  // latency) into one under the op's protocol: wire bytes, rounds x round_factor steps, each at
  // least the hop's synchronisation latency, the transfer at least the payload at the cap.
  // `hop_each_round` = false: a pipeline's later chunks stream behind the first and pay no hop
  // latency of their own.
  void apply_protocol(Flow& f, const Mechanics& m, int round_factor, bool hop_each_round = true) const;
  // A pipeline's later chunks (P - 1 of them, one flow): each but the flow's own pays the route's
  // latency, which passes while the sender waits for the channel's cap (sim/sim_context.h,
  // CapPacer), so the latencies overlap the transfer rather than follow it.
  void overlap_rest_latencies(Flow& f, const Mechanics& m, int P) const;
  // A first chunk's synchronised hop over `route`: the protocol's hop latency for its hardware
  // class, or the route's own latency when that is longer.
  double first_hop_s(const Mechanics& m, std::uint32_t route) const;

  // NVLS (scalable_nvls.cpp): every device of the period to and from its NVSwitch.
  std::vector<Stage> nvls_stages(const PlanOp& op, int channel);
  void add_nvls_rank_bytes(const PlanOp& op, int channel, std::vector<std::int64_t>& sent,
                           std::vector<std::int64_t>& received);
  // NVLSTree (scalable_nvls.cpp): the switch's flows as NVLS, the tree across nodes computed.
  std::vector<Stage> nvls_tree_stages(const PlanOp& op, int channel, std::int64_t bytes);
  void add_nvls_tree_rank_bytes(const PlanOp& op, int channel, std::vector<std::int64_t>& sent,
                                std::vector<std::int64_t>& received);

  const WorldRing& world_ring(int channel, int channels);
  std::vector<int> chain_wave_hops(const PlanOp& op, const WorldRing& wr, int first, double& repeat);
  // The world ring's edges for a streamed chain's later steps: a network edge as a paced route
  // of its own (its flow held to the channel's cap, as a stream sends no faster; an unpaced flow
  // would take a fair share of the NIC from the other channels' first steps), any other edge as
  // world_ring's. Interned by prepare() for reduce and broadcast only. Two chains on the same
  // channel at once would share the pace link (its cap the later one's).
  const std::vector<std::uint32_t>& chain_rest_routes(int channel, int channels);
  const Tree& tree(int channel, int channels);
  const IntraRings& intra_rings(int channel, int channels);
  const NodeRings& node_rings();
  // Rings and chains (scalable_ring.cpp).
  // Per ring, the largest chunk each representative edge carries, and how many reduce-scatter
  // and allgather steps each rotation takes.
  struct RingLoad {
    std::vector<std::vector<std::int64_t>> M;  // per ring, per edge in [0, period)
    std::vector<int> rs_count, ag_count;      // per rotation
  };
  std::vector<Stage> ring_family_stages(const RingFamily& family) const;
  std::vector<Stage> uneven_ring_stages(const RingFamily& family) const;
  std::vector<Stage> rotation_group_stages(const RingFamily& family, const RingLoad& load) const;
  // `whole_ring`: the flow carries every step of the ring (not one rotation group's).
  Flow ring_flow(const RingFamily& family, std::uint32_t route, std::int64_t bytes, std::int64_t rs_bytes, int steps,
                 bool whole_ring = false) const;
  std::vector<Stage> hierarchical_stages(const PlanOp& op, int channel, std::int64_t bytes);
  std::vector<Stage> chain_stages(const PlanOp& op, int channel, std::int64_t bytes);
  // Gloo's binomial broadcast (sim/binomial_broadcast.h) as a dataflow: each edge's flow starts
  // once the flow into its sender has arrived; a sender's flows start together (any size: plans
  // ask for it on at most strategies/zero_pytorch.h kMaxBinomialRanks ranks).
  std::vector<Stage> binomial_stages(const PlanOp& op, std::int64_t bytes);
  std::vector<Stage> world_ring_stages(const PlanOp& op, int channel);
  // PAT (scalable_pat.cpp): a stage a round of collectives/pat_rounds.h, a flow a rank.
  void pat_routes();
  std::vector<std::int64_t> pat_channel_shares(const PlanOp& op, int channel) const;
  std::vector<Stage> pat_stages(const PlanOp& op, int channel);
  void add_pat_rank_bytes(const PlanOp& op, int channel, std::vector<std::int64_t>& sent,
                          std::vector<std::int64_t>& received);
  // Trees (scalable_tree.cpp): the first chunk up as a dataflow, the other chunks up and down
  // at once, the last chunk down as a dataflow; computed from fair rates beyond
  // kMaxDataflowFlows edges.
  std::vector<Stage> tree_stages(const PlanOp& op, int channel, std::int64_t bytes);
  std::vector<Stage> computed_tree_stages(const PlanOp& op, const Tree& tree, std::int64_t bytes);
  void merge_tree_ends(const PlanOp& op, int channel, const std::vector<Stage>& stages, const ChannelRun& run,
                       std::vector<double>& end_s);
  void add_tree_rank_bytes(const PlanOp& op, int channel, std::int64_t bytes, std::vector<std::int64_t>& sent,
                           std::vector<std::int64_t>& received);
  std::vector<std::int64_t> world_chunks(const PlanOp& op, int channel, const WorldRing& wr);
  int local_shift(int channel, int channels) const;

  const Plan& plan_;
  const ClusterSpec& cluster_;
  Fold fold_;
  Fold wave_fold_;
  Fold unfolded_;
  RouteTable routes_;
  std::map<std::pair<int, int>, WorldRing> world_rings_;
  std::map<std::pair<int, int>, std::vector<std::uint32_t>> chain_rest_routes_;
  std::map<std::pair<int, int>, const Tree*> trees_;  // by (channel, channels)
  std::map<std::vector<int>, Tree> tree_by_shape_;     // by tree_shape_key; keeps Trees in place
  std::map<const Tree*, TreeRates> tree_rates_;
  std::map<std::pair<int, int>, IntraRings> intra_;
  std::vector<NodeRings> node_rings_;  // zero or one
  std::map<std::uint32_t, Mechanics> mech_;  // by op id
  std::map<std::uint32_t, int> chain_place_spread_;  // by op id: every channel's chain asks
  // Replayed rings by their hops' times and shape: channels and like ops ask alike.
  mutable std::map<std::vector<double>, double> replays_;
  ModelStats stats_;
};

// Counts the stages and flows the scalable fidelity simulates for a plan, without simulating it.
ModelStats count_scalable_activities(const Plan& plan, const ClusterSpec& cluster, bool allow_fold = true);

}  // namespace redsim::scalable
