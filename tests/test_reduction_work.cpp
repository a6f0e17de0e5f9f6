// The bytes the busiest rank reduces per collective (collectives/reduction_work.h), worked by hand.
#include <catch2/catch.hpp>

#include "collectives/reduction_work.h"
#include "tests/test_support.h"

using namespace redsim;

namespace {
PlanOp op_of(OpKind kind, std::int64_t bytes, Algorithm a = Algorithm::ring, int channels = 1) {
  PlanOp op;
  op.kind = kind;
  op.bytes = bytes;
  op.algorithm = a;
  op.channels = channels;
  return op;
}
}  // namespace

TEST_CASE("a collective's reduced bytes per rank follow its algorithm", "[collectives][reduction]") {
  const auto star = testing::ideal_star(4, 1e10, 0);
  // Ring reduce-scatter half: every chunk but one's own, 3 of 4 chunks of 1 MB.
  CHECK(reduced_bytes_per_rank(op_of(OpKind::allreduce, 4'000'000), star, 4) == 3'000'000);
  // Two channels each reduce 3 of their 4 chunks of 0.5 MB.
  CHECK(reduced_bytes_per_rank(op_of(OpKind::allreduce, 4'000'000, Algorithm::ring, 2), star, 4) == 3'000'000);
  // A reduce-scatter of uneven shards: the busiest rank owns the smallest and receives the rest.
  auto rs = op_of(OpKind::reduce_scatter, 10'000'000);
  rs.shard_bytes = {1'000'000, 2'000'000, 3'000'000, 4'000'000};
  CHECK(reduced_bytes_per_rank(rs, star, 4) == 9'000'000);
  // A chain toward the root: every rank but the head receives the whole buffer.
  CHECK(reduced_bytes_per_rank(op_of(OpKind::reduce, 5'000'000), star, 4) == 5'000'000);
  // Hierarchical on 2 nodes x 2: half the buffer inside the node, then half its 2 MB shard across.
  const auto two = testing::ideal_multi_node(2, 2, 1e10, 0, 1e9, 0);
  CHECK(reduced_bytes_per_rank(op_of(OpKind::allreduce, 4'000'000, Algorithm::hierarchical), two, 4) == 3'000'000);
  // Nothing to reduce: gathers, broadcasts, one rank.
  CHECK(reduced_bytes_per_rank(op_of(OpKind::allgather, 4'000'000), star, 4) == 0);
  CHECK(reduced_bytes_per_rank(op_of(OpKind::broadcast, 4'000'000), star, 4) == 0);
  CHECK(reduced_bytes_per_rank(op_of(OpKind::allreduce, 4'000'000), testing::ideal_star(1, 1e10, 0), 1) == 0);
}

TEST_CASE("reductions share the rank only on a device without compute capability", "[collectives][reduction]") {
  auto c = testing::ideal_star(4, 1e10, 0);
  CHECK(reductions_share_cpu(c));
  c.device.compute_capability = 9.0;
  CHECK_FALSE(reductions_share_cpu(c));
  // The seconds at the element type's own rate, or at reduce_GBps, or none.
  c.device.compute_capability = 0;
  auto op = op_of(OpKind::allreduce, 4'000'000);
  CHECK(reduction_s_per_rank(op, c, 4) == 0);
  c.device.reduce_GBps = 3;
  CHECK(reduction_s_per_rank(op, c, 4) == Approx(3e6 / 3e9));
  c.device.reduce_GBps_by_dtype[DType::fp16] = 0.1;
  op.dtype = DType::fp16;
  CHECK(reduction_s_per_rank(op, c, 4) == Approx(3e6 / 0.1e9));
}
