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

std::optional<OpKind> nccl_tests_kind_named(std::string_view name) {
  for (OpKind k : kNcclTestsKinds)
    if (name == op_kind_name(k)) return k;
  return std::nullopt;
}

bool op_kind_is_collective(OpKind k) {
  return k != OpKind::forward && k != OpKind::backward && k != OpKind::optimizer && k != OpKind::framework;
}

int group_ranks(const PlanOp& op, int world_size) { return op.group_size > 0 ? op.group_size : world_size; }

std::vector<int> group_members(const PlanOp& op, int world_size, int rank) {
  const int size = group_ranks(op, world_size), stride = op.group_size > 0 ? op.group_stride : 1;
  const int block = size * stride;  // ranks covered by the groups that share this one's block
  const int base = rank / block * block + rank % stride;
  std::vector<int> members;
  for (int i = 0; i < size; ++i) members.push_back(base + i * stride);
  return members;
}

int group_index(const PlanOp& op, int rank) {
  if (op.group_size <= 0) return 0;
  const int block = op.group_size * op.group_stride;
  return rank / block * op.group_stride + rank % op.group_stride;
}

int group_member_index(const PlanOp& op, int rank) {
  if (op.group_size <= 0) return 0;
  const int block = op.group_size * op.group_stride;
  return rank % block / op.group_stride;
}

bool group_is_valid(const PlanOp& op, int world_size) {
  if (op.group_size == 0) return true;
  if (op.group_size < 1 || op.group_stride < 1) return false;
  const std::int64_t block = static_cast<std::int64_t>(op.group_size) * op.group_stride;
  return block <= world_size && world_size % block == 0;
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
