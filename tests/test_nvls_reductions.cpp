// Which reductions NVLS runs: NCCL's NCCL_NVLS_SUPPORTS table (NVIDIA/nccl v2.17.1-1 and v2.18.5-1
// src/include/collectives.h; ncclNvlsSupported in src/include/device.h from v2.19.3-1, the same
// table), and how an average reaches NCCL: nccl-tests' -o avg calls ncclAvg, which NCCL turns
// into a pre-multiplied sum (floating point) or a post-divided one (integers) (v2.18.5-1
// src/enqueue.cc hostToDevRedOp), neither of which the switch reduces; a framework's average is a
// sum of pre-divided gradients.
#include <catch2/catch.hpp>

#include <optional>

#include "collectives/collective_model.h"
#include "collectives/nccl_tuning.h"
#include "core/error.h"
#include "tests/test_support.h"
#include "validate/nccl_tests_log.h"

using namespace redsim;

namespace {

// One node of 8 H100s on an NVSwitch with NVLS (18 x 20 GB/s), NCCL 2.18.5.
ClusterSpec h100_node() {
  auto c = testing::ideal_multi_node(1, 8, 360e9, 0.5e-6, 50e9, 1e-6);
  c.library = CollectiveLibrary::nccl;
  c.device.compute_capability = 9.0;
  c.intra.nvls = true;
  c.nccl_version = 21805;
  return c;
}

// The algorithm NCCL's model picks for an allreduce (or, with `pinned`, the pinned one's check).
Algorithm chosen(const ClusterSpec& c, std::int64_t bytes, DType dtype, ReduceOp op, AvgAs avg,
                 std::optional<Algorithm> pinned = std::nullopt) {
  PlanOp p;
  p.kind = OpKind::allreduce;
  p.bytes = bytes;
  p.dtype = dtype;
  p.reduce_op = op;
  p.request.algorithm = pinned;
  choose_collective(p, c, avg);
  return p.algorithm;
}

}  // namespace

TEST_CASE("NVLS reduces what NCCL's table lists and nothing else", "[collectives][nvls]") {
  // NCCL types 2-5 (32- and 64-bit integers), 6 and 9 (half, bfloat16): sum, max, min; 7 and 8
  // (float, double): sum; 0 and 1 (8-bit integers): none. Prod, and avg (never a switch op), none.
  for (DType t : {DType::int32, DType::int64, DType::fp16, DType::bf16}) {
    CHECK(nccl::nvls_reduces(t, ReduceOp::sum));
    CHECK(nccl::nvls_reduces(t, ReduceOp::max));
    CHECK(nccl::nvls_reduces(t, ReduceOp::min));
  }
  for (DType t : {DType::fp32, DType::fp64}) {
    CHECK(nccl::nvls_reduces(t, ReduceOp::sum));
    CHECK_FALSE(nccl::nvls_reduces(t, ReduceOp::max));
    CHECK_FALSE(nccl::nvls_reduces(t, ReduceOp::min));
  }
  for (DType t : {DType::uint8, DType::bool8}) CHECK_FALSE(nccl::nvls_reduces(t, ReduceOp::sum));
  for (DType t : {DType::fp32, DType::fp16, DType::bf16, DType::fp64, DType::int32, DType::int64, DType::uint8}) {
    CHECK_FALSE(nccl::nvls_reduces(t, ReduceOp::prod));
    CHECK_FALSE(nccl::nvls_reduces(t, ReduceOp::avg));
  }
}

TEST_CASE("a pinned NVLS refuses a reduction the switch cannot do, naming it", "[collectives][nvls]") {
  const auto c = h100_node();
  const std::int64_t mib = 1 << 20;
  try {
    chosen(c, mib, DType::fp32, ReduceOp::max, AvgAs::nccl_avg, Algorithm::nvls);
    FAIL("NVLS with a float max was accepted");
  } catch (const InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains("not fp32 with max"));
  }
  CHECK_THROWS_AS(chosen(c, mib, DType::bf16, ReduceOp::avg, AvgAs::nccl_avg, Algorithm::nvls), InputError);
  CHECK(chosen(c, mib, DType::fp16, ReduceOp::max, AvgAs::nccl_avg, Algorithm::nvls) == Algorithm::nvls);
}

TEST_CASE("ncclAvg keeps the auto choice off NVLS, a framework's average does not", "[collectives][nvls]") {
  // 64 MiB on one H100 node: NCCL's model ranks NVLS first for a sum (the 2.18.5 NVLS bus of
  // 360 x 3/4 GB/s against the ring's LL128 and Simple), so the sum and a framework's average
  // (a sum of divided gradients) run NVLS; ncclAvg, and a float max, fall back to the ring.
  const auto c = h100_node();
  const std::int64_t bytes = 64 << 20;
  CHECK(chosen(c, bytes, DType::fp32, ReduceOp::sum, AvgAs::framework_sum) == Algorithm::nvls);
  CHECK(chosen(c, bytes, DType::fp32, ReduceOp::avg, AvgAs::framework_sum) == Algorithm::nvls);
  CHECK(chosen(c, bytes, DType::fp32, ReduceOp::avg, AvgAs::nccl_avg) == Algorithm::ring);
  CHECK(chosen(c, bytes, DType::fp32, ReduceOp::max, AvgAs::nccl_avg) == Algorithm::ring);
  CHECK(chosen(c, bytes, DType::int32, ReduceOp::max, AvgAs::nccl_avg) == Algorithm::nvls);
}

TEST_CASE("nccl-tests' type names map to a type of their size and NVLS support", "[collectives][nvls]") {
  // nccl-tests src/common.cu test_typenames, with the element sizes of NCCL's types.
  const std::pair<const char*, std::int64_t> sizes[] = {{"int8", 1},   {"uint8", 1},  {"int32", 4},    {"uint32", 4},
                                                        {"int64", 8},  {"uint64", 8}, {"half", 2},     {"float", 4},
                                                        {"double", 8}, {"bfloat16", 2}, {"f8e4m3", 1}, {"f8e5m2", 1}};
  for (const auto& [name, bytes] : sizes) {
    INFO(name);
    const auto t = nccl_tests_dtype(name);
    REQUIRE(t.has_value());
    CHECK(dtype_size_bytes(*t) == bytes);
    CHECK(nccl_tests_type_bytes(name) == bytes);
  }
  // Unsigned integers reduce as their signed twins do; no 8-bit type, fp8 included, is NVLS's.
  CHECK(nccl::nvls_reduces(*nccl_tests_dtype("uint32"), ReduceOp::max));
  CHECK(nccl::nvls_reduces(*nccl_tests_dtype("uint64"), ReduceOp::min));
  CHECK_FALSE(nccl::nvls_reduces(*nccl_tests_dtype("f8e4m3"), ReduceOp::sum));
  CHECK_FALSE(nccl::nvls_reduces(*nccl_tests_dtype("int8"), ReduceOp::sum));
  CHECK_FALSE(nccl_tests_dtype("complex64").has_value());
}
