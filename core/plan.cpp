#include "core/plan.h"

#include <array>
#include <utility>

namespace redsim {
namespace {
constexpr std::array<std::pair<OpKind, std::string_view>, 9> kKinds{{
    {OpKind::forward, "forward"},
    {OpKind::backward, "backward"},
    {OpKind::optimizer, "optimizer"},
    {OpKind::allreduce, "allreduce"},
    {OpKind::reduce, "reduce"},
    {OpKind::reduce_scatter, "reduce_scatter"},
    {OpKind::allgather, "allgather"},
    {OpKind::broadcast, "broadcast"},
    {OpKind::framework, "framework"},
}};
}  // namespace

std::string_view op_kind_name(OpKind k) {
  for (const auto& [kind, name] : kKinds)
    if (kind == k) return name;
  return "?";
}

bool op_kind_is_collective(OpKind k) {
  return k != OpKind::forward && k != OpKind::backward && k != OpKind::optimizer && k != OpKind::framework;
}

std::uint32_t Plan::add(PlanOp op) {
  op.id = static_cast<std::uint32_t>(ops.size());
  ops.push_back(std::move(op));
  return ops.back().id;
}

std::uint32_t Plan::stream_index(std::string_view name) {
  for (std::size_t i = 0; i < streams.size(); ++i)
    if (streams[i] == name) return static_cast<std::uint32_t>(i);
  streams.emplace_back(name);
  return static_cast<std::uint32_t>(streams.size() - 1);
}

}  // namespace redsim
