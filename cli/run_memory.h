// redsim run's memory report (issue 18 item 6): per rank, the bytes its executor holds for
// parameters, gradients, optimizer state and collective buffers and its process's peak resident
// memory, next to the strategy's memory model (the figure simulate prints) for the same plan.
#pragma once
#include <ostream>

#include <nlohmann/json.hpp>

#include "realexec/rank_runner.h"

namespace redsim::cli {

void print_run_memory(std::ostream& out, const realexec::RunOutcome& r);
nlohmann::json run_memory_json(const realexec::RunOutcome& r);

}  // namespace redsim::cli
