// The SimGrid engine: interprets a Plan on a cluster and returns the simulated Timeline.
// Two fidelities (sim/README.md): exact simulates every point-to-point transfer of every
// collective algorithm; scalable aggregates them into long-lived flows over one period of a
// symmetric cluster, for thousands of ranks.
#pragma once
#include <cstdint>
#include <string_view>

#include "core/cluster.h"
#include "core/plan.h"
#include "core/timeline.h"

namespace redsim {

enum class Fidelity { exact, scalable, auto_select };

std::string_view fidelity_name(Fidelity f);  // "exact", "scalable", "auto"
// Parses "exact", "scalable" or "auto"; throws InputError otherwise.
Fidelity parse_fidelity(std::string_view name);

// ZeRO's timeline with a record per rank of each owner's chain (ranks squared) fits the default
// --max-ops up to about this many ranks.
inline constexpr int kChainRankEndsMaxRanks = 4096;

struct SimOptions {
  bool sim_log = false;  // let SimGrid print its own log (silenced by default)
  Fidelity fidelity = Fidelity::exact;
  // Scalable fidelity only: fold symmetric clusters onto one period (off: simulate every link;
  // for checking the fold).
  bool scalable_fold = true;
  // Scalable fidelity only: in a world of more ranks than this, a chain collective (reduce,
  // broadcast; NCCL runs them as rings) records every rank ending when the chain ends, where
  // its next op may start in this engine, instead of each rank's own end; below, each rank's.
  // A per-rank record of each owner's reduce makes a ZeRO step's timeline ranks squared.
  int chain_rank_ends_max_ranks = kChainRankEndsMaxRanks;
};

// The point-to-point transfers the exact fidelity would simulate for this plan.
std::int64_t estimated_exact_transfers(const Plan& plan, const ClusterSpec& cluster);

// auto_select chooses exact when the world has at most kAutoExactMaxRanks ranks and the exact
// fidelity would simulate at most kAutoExactMaxTransfers transfers (a few seconds at ~4 us
// each), and scalable otherwise; exact and scalable are returned as they are.
inline constexpr int kAutoExactMaxRanks = 512;
inline constexpr std::int64_t kAutoExactMaxTransfers = 1'000'000;
Fidelity resolve_fidelity(const Plan& plan, const ClusterSpec& cluster, Fidelity requested);

// Checks the Plan is one this engine can run (supported collectives, well-formed dependencies);
// throws InputError otherwise. simulate() calls it first.
void check_plan_for_sim(const Plan& plan, const ClusterSpec& cluster);

// Timeline records a simulation stores: ops x ranks at exact fidelity; at scalable, one per op
// whose ranks end together and one per rank for trees, chains and grouped ops (chains past
// chain_rank_ends_max_ranks: one, and the ranks whose bytes differ).
std::int64_t timeline_records(const Plan& plan, Fidelity used, int chain_rank_ends_max_ranks = kChainRankEndsMaxRanks);
// Refuses (InputError) a simulation over plan.max_ops: timeline records (above), and for the
// exact fidelity the estimated point-to-point transfers. simulate() calls it first.
void check_sim_work(const Plan& plan, const ClusterSpec& cluster, Fidelity used,
                    int chain_rank_ends_max_ranks = kChainRankEndsMaxRanks);
// Throws std::runtime_error when a timeline has an op that never finished (simulate() calls it).
void check_timeline_complete(const Plan& plan, const Timeline& tl);

// Runs the simulation in a child process: SimGrid 3.32 allows one Engine per process, and a
// child per simulation lets callers (tests, the tuner) simulate many times, also in parallel.
Timeline simulate(const Plan& plan, const ClusterSpec& cluster, const SimOptions& options = {});

// The simulation itself, in this process, at the fidelity options.fidelity resolves to.
// Callable once per process.
Timeline simulate_in_process(const Plan& plan, const ClusterSpec& cluster, const SimOptions& options);

}  // namespace redsim
