// zero --zero-impl pytorch: PyTorch's ZeroRedundancyOptimizer over DDP (strategies/zero_pytorch.h).
// Owners are worked by hand from torch 1.13's rule: trainable parameters largest first (stable),
// each to the rank with the fewest elements so far, the lowest rank on a tie.
#include <catch2/catch.hpp>

#include "core/cluster_json.h"
#include "core/knobs_json.h"
#include "strategies/ddp_bucketing.h"
#include "strategies/strategy.h"
#include "strategies/zero_pytorch.h"
#include "tests/test_support.h"

using namespace redsim;
using nlohmann::json;

namespace {

// Five fp32 parameters of 3, 10, 2, 7 and 5 elements, in registration order.
ModelTrace five_params() {
  auto t = testing::uniform_trace(5, 1, 1e-4, 2e-4, 8e-3);
  const std::int64_t sizes[] = {3, 10, 2, 7, 5};
  for (std::size_t i = 0; i < 5; ++i) t.params[i].numel = sizes[i];
  return t;
}

Knobs pytorch_zero() {
  Knobs k;
  k.strategy = "zero";
  k.zero_impl = ZeroImpl::pytorch;
  k.zero_stage = 1;
  return k;
}

}  // namespace

TEST_CASE("ZeroRedundancyOptimizer's partition: largest first, to the rank with the fewest elements", "[strategies][zero]") {
  // Sorted: 10 (p1), 7 (p3), 5 (p4), 3 (p0), 2 (p2). Ranks after each: 10|0, 10|7, 10|12, 13|12, 13|14.
  const auto owned = zero_redundancy_partition(five_params(), 2);
  REQUIRE(owned.size() == 2);
  CHECK(owned[0] == std::vector<std::size_t>{1, 0});
  CHECK(owned[1] == std::vector<std::size_t>{3, 4, 2});

  // Equal sizes keep registration order and go to the lowest of the least loaded ranks.
  auto even = testing::uniform_trace(3, 4, 0, 0, 0);
  const auto ties = zero_redundancy_partition(even, 2);
  CHECK(ties[0] == std::vector<std::size_t>{0, 2});
  CHECK(ties[1] == std::vector<std::size_t>{1});

  // Frozen parameters are not the optimizer's: they have no owner.
  auto frozen = five_params();
  frozen.params[1].trainable = false;
  const auto without = zero_redundancy_partition(frozen, 2);
  // Sorted: 7 (p3), 5 (p4), 3 (p0), 2 (p2). Ranks after each: 7|0, 7|5, 7|8, 9|8.
  CHECK(without[0] == std::vector<std::size_t>{3, 2});
  CHECK(without[1] == std::vector<std::size_t>{4, 0});
}

TEST_CASE("zero --zero-impl pytorch: DDP's bucket allreduces, the owners' optimizer, a broadcast per parameter",
          "[strategies][zero]") {
  const auto trace = five_params();
  const auto cluster = testing::ideal_star(2, 1e9, 1e-6);
  const auto plan = make_strategy("zero")->plan(trace, cluster, pytorch_zero());

  std::int64_t allreduced = 0;
  std::vector<std::pair<int, std::size_t>> broadcasts;  // (root, parameter)
  std::uint32_t optimizer = 0;
  double optimizer_s = -1;
  for (const auto& op : plan.ops) {
    if (op.kind == OpKind::allreduce) allreduced += op.bytes;
    if (op.kind == OpKind::optimizer) optimizer = op.id, optimizer_s = op.duration_s;
    if (op.kind == OpKind::broadcast && !op.slices.empty()) {
      REQUIRE(op.slices.size() == 1);
      CHECK(op.slices[0].numel == trace.params[op.slices[0].param].numel);
      CHECK(op.bytes == trace.params[op.slices[0].param].numel * 4);
      CHECK(op.deps == std::vector<std::uint32_t>{optimizer});
      broadcasts.emplace_back(op.root, op.slices[0].param);
    }
    CHECK(op.kind != OpKind::reduce);
    CHECK(op.kind != OpKind::allgather);
  }
  // On a cluster with ideal (Gloo) collectives, Gloo's binomial broadcasts, alternating between
  // ProcessGroupGloo's two worker threads.
  std::vector<std::string> lanes;
  for (const auto& op : plan.ops)
    if (op.kind == OpKind::broadcast && !op.slices.empty()) {
      CHECK(op.algorithm == Algorithm::binomial);
      lanes.push_back(plan.streams[op.stream]);
    }
  CHECK(lanes == std::vector<std::string>{"comm0", "comm1", "comm0", "comm1", "comm0"});
  // Every gradient is allreduced once (27 fp32 elements), as in DDP.
  CHECK(allreduced == 27 * 4);
  // Rank 0's parameters first, each rank's in its partition order.
  CHECK(broadcasts == std::vector<std::pair<int, std::size_t>>{{0, 1}, {0, 0}, {1, 3}, {1, 4}, {1, 2}});
  // The busiest rank steps 14 of the 27 elements.
  CHECK(optimizer_s == Approx(8e-3 * 14 / 27));
  // Model state: everything replicated but Adam's 8 bytes per fp32 element, of the busiest
  // rank's 14 elements; DDP's bucket copy of the gradients.
  CHECK(plan.memory.params_bytes == 27 * 4);
  CHECK(plan.memory.grads_bytes == 27 * 4);
  CHECK(plan.memory.optimizer_bytes == 14 * 8);
  CHECK(plan.memory.comm_buffer_bytes == 27 * 4);
}

TEST_CASE("zero_impl in a knobs file: pytorch is stage 1, an unknown name or stage 2 is refused", "[knobs][zero]") {
  json j = {{"strategy", "zero"}, {"zero_impl", "pytorch"}};
  const Knobs k = knobs_from_json(j, "k.json", "$.knobs", Knobs{});
  CHECK(k.zero_impl == ZeroImpl::pytorch);
  CHECK(k.zero_stage == 1);
  CHECK(knobs_from_json(knobs_to_json(k), "k.json", "$", Knobs{}).zero_impl == ZeroImpl::pytorch);

  const auto stage2 = testing::error_of([] {
    knobs_from_json(json{{"zero_stage", 2}, {"zero_impl", "pytorch"}}, "k.json", "$.knobs", Knobs{});
  });
  CHECK(stage2.find("k.json") != std::string::npos);
  CHECK(stage2.find("$.knobs.zero_impl") != std::string::npos);
  CHECK(stage2.find("stage 1") != std::string::npos);
  const auto unknown = testing::error_of([] {
    knobs_from_json(json{{"zero_impl", "fairscale"}}, "k.json", "$.knobs", Knobs{});
  });
  CHECK(unknown.find("$.knobs.zero_impl") != std::string::npos);
}

TEST_CASE("zero --zero-impl pytorch on NCCL: ring broadcasts on one stream, as ProcessGroupNCCL issues them",
          "[strategies][zero]") {
  auto cluster = load_cluster(REDSIM_SOURCE_DIR "/configs/dgx-h100.json");
  const auto plan = make_strategy("zero")->plan(five_params(), cluster, pytorch_zero());
  int broadcasts = 0;
  for (const auto& op : plan.ops)
    if (op.kind == OpKind::broadcast && !op.slices.empty()) {
      ++broadcasts;
      CHECK(op.algorithm == Algorithm::ring);
      CHECK(plan.streams[op.stream] == "comm0");
    }
  CHECK(broadcasts == 5);
}
