#include "core/collective_types.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <utility>

namespace redsim {
namespace {
constexpr std::array<std::pair<ReduceOp, std::string_view>, 5> kOps{{
    {ReduceOp::sum, "sum"}, {ReduceOp::avg, "avg"}, {ReduceOp::max, "max"},
    {ReduceOp::min, "min"}, {ReduceOp::prod, "prod"}}};
constexpr std::array<std::pair<Algorithm, std::string_view>, 9> kAlgos{{
    {Algorithm::ring, "ring"}, {Algorithm::tree, "tree"}, {Algorithm::nvls, "nvls"},
    {Algorithm::nvls_tree, "nvlstree"}, {Algorithm::collnet_direct, "collnet_direct"},
    {Algorithm::collnet_chain, "collnet_chain"}, {Algorithm::hierarchical, "hierarchical"},
    {Algorithm::binomial, "binomial"}, {Algorithm::pat, "pat"}}};
// Lower-cased spellings that also parse (NCCL's names without case, and a few obvious variants).
constexpr std::array<std::pair<Algorithm, std::string_view>, 6> kAlgoAliases{{
    {Algorithm::nvls_tree, "nvls_tree"}, {Algorithm::collnet_direct, "collnetdirect"},
    {Algorithm::collnet_direct, "collnet"}, {Algorithm::collnet_chain, "collnetchain"},
    {Algorithm::collnet_direct, "collnet-direct"}, {Algorithm::collnet_chain, "collnet-chain"}}};
constexpr std::array<std::pair<Algorithm, std::string_view>, 7> kNcclAlgos{{
    {Algorithm::ring, "Ring"}, {Algorithm::tree, "Tree"}, {Algorithm::nvls, "NVLS"},
    {Algorithm::nvls_tree, "NVLSTree"}, {Algorithm::collnet_direct, "CollNetDirect"},
    {Algorithm::collnet_chain, "CollNetChain"}, {Algorithm::pat, "PAT"}}};
constexpr std::array<std::pair<Protocol, std::string_view>, 3> kProtos{{
    {Protocol::ll, "ll"}, {Protocol::ll128, "ll128"}, {Protocol::simple, "simple"}}};
constexpr std::array<std::pair<Protocol, std::string_view>, 3> kNcclProtos{{
    {Protocol::ll, "LL"}, {Protocol::ll128, "LL128"}, {Protocol::simple, "Simple"}}};

template <class E, std::size_t N>
std::string_view name_of(const std::array<std::pair<E, std::string_view>, N>& table, E v) {
  for (const auto& [e, n] : table)
    if (e == v) return n;
  return "";
}
template <class E, std::size_t N>
std::optional<E> parse_from(const std::array<std::pair<E, std::string_view>, N>& table, std::string_view s) {
  for (const auto& [e, n] : table)
    if (n == s) return e;
  return std::nullopt;
}
std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}
}  // namespace

std::string_view reduce_op_name(ReduceOp op) { return name_of(kOps, op); }
std::optional<ReduceOp> parse_reduce_op(std::string_view name) { return parse_from(kOps, name); }
std::string_view algorithm_name(Algorithm a) { return name_of(kAlgos, a); }
std::string_view protocol_name(Protocol p) { return name_of(kProtos, p); }
std::string_view nccl_algorithm_name(Algorithm a) { return name_of(kNcclAlgos, a); }
std::string_view nccl_protocol_name(Protocol p) { return name_of(kNcclProtos, p); }

std::optional<Algorithm> parse_algorithm(std::string_view name) {
  const auto l = lower(name);
  if (l == "binomial") return std::nullopt;  // a plan's choice for Gloo broadcasts, not a user's
  if (auto a = parse_from(kAlgos, std::string_view(l))) return a;
  return parse_from(kAlgoAliases, std::string_view(l));
}

std::string requested_algorithm(const CollectiveRequest& req) {
  if (req.algorithm_list) return nccl_list_value(*req.algorithm_list);
  return req.algorithm ? std::string(algorithm_name(*req.algorithm)) : "auto";
}

std::string requested_protocol(const CollectiveRequest& req) {
  if (req.protocol_list) return nccl_list_value(*req.protocol_list);
  return req.protocol ? std::string(protocol_name(*req.protocol)) : "auto";
}

std::optional<Protocol> parse_protocol(std::string_view name) { return parse_from(kProtos, std::string_view(lower(name))); }

}  // namespace redsim
