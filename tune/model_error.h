// How far the guided search's step model (tune/step_model.h) was from the simulator, per
// strategy: for every setting the guided search simulated after the model had an estimate for
// it, the estimate it ranked the setting by against the simulated time per optimizer step.
// Reported (stdout and tuned.json) because the search prunes on these estimates: a family the
// model badly underestimates gets simulations it does not deserve, one it overestimates can be
// pruned wrongly, which the prune margin only covers up to its size.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tune/tuner.h"

namespace redsim::tune {

struct ModelErrorRow {
  std::string family;
  int settings = 0;               // simulated settings that had an estimate
  double mean_abs_error = 0;      // raw model: mean |estimate - simulated| / simulated
  double max_abs_error = 0;
  double mean_signed_error = 0;   // < 0: the model underestimates
  double corrected_mean_abs_error = 0;  // the estimate corrected by its line's nearest simulation
  double worst_estimate_s = 0;    // the raw estimate of the worst setting, and its simulated time
  double worst_simulated_s = 0;
};

// Over the searches given (each setting counted once per search that simulated it), in the
// families' order of first appearance.
std::vector<ModelErrorRow> step_model_error(const std::vector<const TuneResult*>& results);
nlohmann::json step_model_error_json(const std::vector<ModelErrorRow>& rows);
void print_step_model_error(std::ostream& out, const std::vector<ModelErrorRow>& rows);

}  // namespace redsim::tune
