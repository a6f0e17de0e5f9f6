#include "core/collective_types.h"

#include <array>
#include <utility>

namespace redsim {
namespace {
constexpr std::array<std::pair<ReduceOp, std::string_view>, 5> kOps{{
    {ReduceOp::sum, "sum"}, {ReduceOp::avg, "avg"}, {ReduceOp::max, "max"},
    {ReduceOp::min, "min"}, {ReduceOp::prod, "prod"}}};
constexpr std::array<std::pair<Algorithm, std::string_view>, 3> kAlgos{{
    {Algorithm::ring, "ring"}, {Algorithm::tree, "tree"}, {Algorithm::hierarchical, "hierarchical"}}};

template <class E, std::size_t N>
std::string_view name_of(const std::array<std::pair<E, std::string_view>, N>& table, E v) {
  for (const auto& [e, n] : table)
    if (e == v) return n;
  return "?";
}
template <class E, std::size_t N>
std::optional<E> parse_from(const std::array<std::pair<E, std::string_view>, N>& table, std::string_view s) {
  for (const auto& [e, n] : table)
    if (n == s) return e;
  return std::nullopt;
}
}  // namespace

std::string_view reduce_op_name(ReduceOp op) { return name_of(kOps, op); }
std::optional<ReduceOp> parse_reduce_op(std::string_view name) { return parse_from(kOps, name); }
std::string_view algorithm_name(Algorithm a) { return name_of(kAlgos, a); }
std::optional<Algorithm> parse_algorithm(std::string_view name) { return parse_from(kAlgos, name); }

}  // namespace redsim
