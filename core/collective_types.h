// Names shared by Plans, knobs and engines: collective kinds, algorithms and reduce ops.
#pragma once
#include <optional>
#include <string_view>

namespace redsim {

enum class ReduceOp { sum, avg, max, min, prod };
enum class Algorithm { ring, tree, hierarchical };

std::string_view reduce_op_name(ReduceOp op);
std::optional<ReduceOp> parse_reduce_op(std::string_view name);
std::string_view algorithm_name(Algorithm a);
std::optional<Algorithm> parse_algorithm(std::string_view name);

}  // namespace redsim
