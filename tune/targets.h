// redsim tune --target: one search per framework, over only what that framework runs with NCCL,
// compared with the framework's own defaults (simulated too). A user pastes what the section
// says, so a section never recommends a setting its framework cannot express, nor one that was
// not simulated.
#pragma once
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/trace.h"
#include "tune/search_space.h"
#include "tune/tuner.h"

namespace redsim::tune {

// Below this gap to the defaults the model cannot tell the two apart (its error against the
// simulator and the simulator's against real runs are larger): keep the framework's defaults.
inline constexpr double kKeepDefaultsGap = 0.01;

std::vector<std::string> target_names();  // ddp, deepspeed, horovod, nccl, fsdp
// "all" or one name -> the targets, in canonical order; InputError on anything else.
std::vector<std::string> parse_targets(const std::string& text);

// The families a target searches, and its axes (hierarchical only for Horovod; NCCL: DDP's
// buckets fixed at its defaults, only the collective settings searched).
void check_strategies(const TuneConstraints& base);  // InputError on a family tune cannot search
TuneConstraints target_constraints(const std::string& target, const TuneConstraints& base);
SearchAxes target_axes(const std::string& target, const TuneConstraints& constraints);
// The framework's defaults as one grid point (its family's constraints and axes).
TuneConstraints default_constraints(const std::string& target, const TuneConstraints& base);
SearchAxes default_axes(const std::string& target, const TuneConstraints& constraints, const ModelTrace& trace);
std::string defaults_description(const std::string& target);  // "DDP defaults: bucket_cap_mb=25, ..."

struct TargetSection {
  std::string target;
  TuneResult result;       // the target's own search
  Candidate best;          // its best simulated setting
  double best_s = 0;       // time per optimizer step
  bool has_defaults = false;
  Candidate defaults;      // the framework's defaults, simulated
  double defaults_s = 0;
  bool keep_defaults = false;  // best within kKeepDefaultsGap of the defaults
  const Candidate& pick() const { return keep_defaults ? defaults : best; }
  double pick_s() const { return keep_defaults ? defaults_s : best_s; }
  double gap() const { return defaults_s > 0 ? (defaults_s - best_s) / defaults_s : 0.0; }  // > 0: faster than defaults
};

// Searches one target (exhaustively when its grid is small) and simulates its defaults. A target
// with nothing that fits in memory throws InputError naming the target.
TargetSection tune_target(const ModelTrace& trace, const ClusterSpec& cluster, const TuneConstraints& base,
                          const std::string& target, TuneOptions options);

// "predicted 12.345 ms per optimizer step; DDP defaults 13.000 ms (...): 5.0% faster" or "...:
// within 1%: keep the defaults".
std::string section_summary(const TargetSection& s);

}  // namespace redsim::tune
