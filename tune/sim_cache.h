// Simulations shared between the searches of one tune run (one search per --target). The
// targets' grids overlap (DDP's settings are most of Horovod's; NCCL's are DDP's default buckets;
// DeepSpeed's ZeRO-3 settings are FSDP's), and a setting's simulated time depends only on its
// plan's timing key and the fidelity, so a setting simulated for one target serves every target
// that can run it: each search first adopts every cached simulation of its grid (which also
// calibrates its step model for free), and simulates only what is new.
//
// Searches run one after another and add their results in canonical order, so what a search
// finds in the cache, and hence its outcome, does not depend on threads or timing.
#pragma once
#include <cstddef>
#include <map>
#include <utility>
#include <vector>

#include "sim/sim_engine.h"
#include "tune/step_model.h"
#include "tune/tuner.h"

namespace redsim::tune {

// What one simulation says. Evaluation::objective_s is recomputed by the search that adopts it
// (it scales time per sample by that search's samples per optimizer step).
struct CachedSimulation {
  Evaluation evaluation;
  std::vector<CollectiveSample> samples;  // for the step model
};

class SimCache {
 public:
  const CachedSimulation* find(Fidelity fidelity, const TimingKey& key) const {
    const auto it = map_.find({static_cast<int>(fidelity), key});
    return it == map_.end() ? nullptr : &it->second;
  }
  void put(Fidelity fidelity, const TimingKey& key, CachedSimulation sim) {
    map_.try_emplace({static_cast<int>(fidelity), key}, std::move(sim));
  }
  std::size_t size() const { return map_.size(); }

 private:
  std::map<std::pair<int, TimingKey>, CachedSimulation> map_;
};

}  // namespace redsim::tune
