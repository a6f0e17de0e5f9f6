// A measured timeline without the framework ops the cluster's per-bucket costs add to the plan:
// matched op by op (name and kind, in order), each framework op zero-length where the op before it
// ended.
#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "validate/measured_framework_ops.h"

using namespace redsim;

namespace {
Plan plan_of(const std::vector<std::pair<std::string, OpKind>>& ops) {
  Plan p;
  p.world_size = 2;
  const auto compute = p.stream_index("compute");
  for (const auto& [name, kind] : ops) {
    PlanOp op;
    op.name = name;
    op.kind = kind;
    op.stream = compute;
    p.add(op);
  }
  return p;
}
const std::vector<std::pair<std::string, OpKind>> kBare = {
    {"fwd", OpKind::forward}, {"bwd:0", OpKind::backward}, {"bwd:1", OpKind::backward},
    {"allreduce:bucket0", OpKind::allreduce}, {"allreduce:bucket1", OpKind::allreduce}, {"optimizer", OpKind::optimizer}};
const std::vector<std::pair<std::string, OpKind>> kWith = {
    {"fwd", OpKind::forward},
    {"bwd:0", OpKind::backward},
    {"framework:bucket0", OpKind::framework},
    {"bwd:1", OpKind::backward},
    {"framework:bucket1", OpKind::framework},
    {"allreduce:bucket0", OpKind::allreduce},
    {"allreduce:bucket1", OpKind::allreduce},
    {"framework:copy-out", OpKind::framework},
    {"optimizer", OpKind::optimizer}};
}  // namespace

TEST_CASE("a plan's ops less its framework ops map by name and kind, in order", "[validate][framework]") {
  const Plan with = plan_of(kWith), without = plan_of(kBare);
  const auto index = ops_without_framework(with, without);
  REQUIRE(index);
  const std::vector<std::optional<std::size_t>> expected = {0, 1, std::nullopt, 2, std::nullopt, 3, 4, std::nullopt, 5};
  CHECK(*index == expected);

  // Not the same plan less framework ops: a renamed op, one op too many or too few.
  auto renamed = kBare;
  renamed[2].first = "bwd:2";
  CHECK_FALSE(ops_without_framework(with, plan_of(renamed)));
  auto longer = kBare;
  longer.emplace_back("extra", OpKind::optimizer);
  CHECK_FALSE(ops_without_framework(with, plan_of(longer)));
  auto shorter = kBare;
  shorter.pop_back();
  CHECK_FALSE(ops_without_framework(with, plan_of(shorter)));
  auto rekinded = kBare;
  rekinded[3].second = OpKind::broadcast;
  CHECK_FALSE(ops_without_framework(with, plan_of(rekinded)));
}

TEST_CASE("each framework op the measurement lacks takes no time where the op before it ended", "[validate][framework]") {
  const Plan with = plan_of(kWith), without = plan_of(kBare);
  Timeline measured("measured", 2, without.ops.size());
  for (int r = 0; r < 2; ++r)
    for (std::size_t j = 0; j < without.ops.size(); ++j) {
      const double start = 10.0 * static_cast<double>(j) + r;
      measured.mutable_at(r, j) = {start, start, start + 5, 7, 9};
    }
  const auto index = ops_without_framework(with, without);
  REQUIRE(index);
  const Timeline out = with_framework_ops(measured, with, *index);
  REQUIRE(out.op_count == with.ops.size());
  REQUIRE(out.world_size == 2);
  CHECK(out.source == "measured");
  for (int r = 0; r < 2; ++r)
    for (std::size_t i = 0; i < with.ops.size(); ++i) {
      INFO("rank " << r << " op " << with.ops[i].name);
      const OpTiming& t = out.at(r, i);
      if (const auto j = (*index)[i]) {
        CHECK(t == measured.at(r, *j));
      } else {
        const double before_end = out.at(r, i - 1).end_s;  // every framework op here follows another op
        CHECK(t.ready_s == before_end);
        CHECK(t.start_s == before_end);
        CHECK(t.end_s == before_end);
        CHECK(t.bytes_sent == 0);
        CHECK(t.bytes_received == 0);
      }
    }
  // bucket1's framework op follows bwd:1 (measured op 2): rank 1 ends it at 10 x 2 + 1 + 5.
  CHECK(out.at(1, 4).start_s == 26.0);
}
