// A measured timeline has no op for a framework's own cost around its collectives: a profile shows
// DDP's per-bucket work only as the gap before each allreduce, and `trace import --kineto` writes
// its timeline against a plan without framework ops. When the cluster models those costs
// (configs/README.md, "framework"), the plan validate simulates has framework ops the file lacks.
#pragma once
#include <optional>

#include "core/plan.h"
#include "core/timeline.h"

namespace redsim {

// The plan's ops less its framework ops, as a map: for each op of `with`, the index of the same op
// in `without` (its name and kind, in the same order), or nullopt for a framework op. nullopt
// overall when `without` is not `with` less its framework ops.
std::optional<std::vector<std::optional<std::size_t>>> ops_without_framework(const Plan& with, const Plan& without);

// `measured`, timed against `without`, as a timeline of `with`: each framework op takes zero time
// where the op before it in plan order ended on that rank (the measurement shows none of its own).
Timeline with_framework_ops(const Timeline& measured, const Plan& with,
                            const std::vector<std::optional<std::size_t>>& index_in_without);

}  // namespace redsim
