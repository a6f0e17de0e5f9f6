// DDP communication hooks on bucketed: bytes out of the Plan against the hooks' closed forms.
#include <catch2/catch.hpp>

#include "core/step_summary.h"
#include "sim/sim_engine.h"
#include "strategies/comm_hooks.h"
#include "strategies/strategy.h"
#include "tests/test_support.h"

using namespace redsim;

namespace {
std::int64_t allreduce_bytes(const Plan& plan) {
  std::int64_t b = 0;
  for (const auto& op : plan.ops) b += op.kind == OpKind::allreduce ? op.bytes : 0;
  return b;
}
}  // namespace

TEST_CASE("fp16 and bf16 hooks allreduce half the bytes and pay two casts at memory bandwidth", "[strategies][hooks]") {
  const std::int64_t numel = 1'000'000;
  auto trace = testing::uniform_trace(4, numel, 1e-3, 2e-3, 0);
  auto cluster = testing::ideal_star(4, 1e10, 2e-6);
  cluster.device.reduce_GBps = 100;  // elementwise kernels at 3 x 100 GB/s of memory traffic
  Knobs k;
  k.broadcast_buffers = false;
  const auto plain = make_strategy("bucketed")->plan(trace, cluster, k);
  for (auto hook : {CommHook::fp16, CommHook::bf16}) {
    k.comm_hook = hook;
    const auto plan = make_strategy("bucketed")->plan(trace, cluster, k);
    CHECK(allreduce_bytes(plan) * 2 == allreduce_bytes(plain));
    double cast_s = 0;
    for (const auto& op : plan.ops) {
      if (op.kind == OpKind::allreduce) CHECK(op.dtype == (hook == CommHook::fp16 ? DType::fp16 : DType::bf16));
      if (op.name.rfind("hook:", 0) == 0) cast_s += op.duration_s;
    }
    // Each cast reads 4 and writes 2 bytes per element, twice per gradient.
    CHECK(cast_s == Approx(2 * 4 * numel * 6.0 / 300e9));
  }
}

TEST_CASE("on a device of unknown compute capability the casts run at its memory_GBps", "[strategies][hooks]") {
  const std::int64_t numel = 1'000'000;
  auto trace = testing::uniform_trace(4, numel, 1e-3, 2e-3, 0);
  auto cluster = testing::ideal_star(4, 1e10, 2e-6);  // a CPU rank: no reduce_GBps, no compute capability
  Knobs k;
  k.broadcast_buffers = false;
  k.comm_hook = CommHook::fp16;
  const auto cast_s = [&] {
    double s = 0;
    for (const auto& op : make_strategy("bucketed")->plan(trace, cluster, k).ops)
      if (op.name.rfind("hook:", 0) == 0) s += op.duration_s;
    return s;
  };
  CHECK(cast_s() == 0);  // nothing known: free, as before
  cluster.device.memory_GBps = 2;
  // Two casts per gradient, each reading 4 and writing 2 bytes per element, at 2 GB/s.
  CHECK(cast_s() == Approx(2 * 4 * numel * 6.0 / 2e9));
}

TEST_CASE("PowerSGD allreduces (m + n) r per matrix and 1-D tensors whole", "[strategies][hooks]") {
  const std::int64_t side = 1000;
  auto trace = testing::uniform_trace(3, side * side, 1e-3, 2e-3, 0);
  TraceParam bias;
  bias.name = "l1.bias";
  bias.numel = side;
  bias.layer = 1;
  trace.params.push_back(bias);
  trace.grad_ready_order = derive_grad_ready_order(trace);
  auto cluster = testing::ideal_star(4, 1e10, 2e-6);
  Knobs k;
  k.broadcast_buffers = false;
  k.comm_hook = CommHook::powersgd;
  for (int r : {1, 4}) {
    k.powersgd_rank = r;
    const auto plan = make_strategy("bucketed")->plan(trace, cluster, k);
    // Three 1000 x 1000 matrices: P and Q of 1000 r fp32 elements each; the bias uncompressed.
    CHECK(allreduce_bytes(plan) == 3 * (side + side) * r * 4 + side * 4);
    auto s = summarize(plan, simulate(plan, cluster));
    CHECK(s.step_time_s > 0);
  }
  // A matrix too small to gain 2x stays uncompressed (PyTorch's _should_compress).
  // 6 x 6: rank 1 sends 12 < 36 / 2 elements, rank 4 sends 48.
  CHECK(powersgd_matrix(testing::uniform_trace(1, 36, 0, 0, 0), 0, 1).compressed);
  CHECK_FALSE(powersgd_matrix(testing::uniform_trace(1, 36, 0, 0, 0), 0, 4).compressed);
}

TEST_CASE("PowerSGD views a parameter of known shape as shape[0] x numel/shape[0]", "[strategies][hooks]") {
  // resnet's conv1 (64, 3, 7, 7) is 64 x 147 in powerSGD_hook, not the most square 96 x 98; an
  // embedding (50257, 1600) is 50257 x 1600; a 1-D tensor is n x 1 and never compressed.
  auto trace = testing::uniform_trace(4, 64 * 3 * 7 * 7, 1e-3, 2e-3, 0);
  trace.params[0].shape = std::vector<std::int64_t>{64, 3, 7, 7};
  auto m = powersgd_matrix(trace, 0, 4);
  CHECK(m.rows == 64);
  CHECK(m.cols == 147);
  CHECK(m.rank == 4);
  CHECK(m.compressed);  // (64 + 147) 4 2 = 1688 < 9408
  trace.params[0].shape.reset();
  m = powersgd_matrix(trace, 0, 4);
  CHECK(m.rows == 96);  // 9408 = 96 x 98, the largest divisor at most sqrt(9408) = 96.99
  CHECK(m.cols == 98);

  trace.params[1].numel = 50257 * 1600;
  trace.params[1].shape = std::vector<std::int64_t>{50257, 1600};
  m = powersgd_matrix(trace, 1, 8);
  CHECK(m.rows == 50257);
  CHECK(m.cols == 1600);

  trace.params[2].numel = 4096;
  trace.params[2].shape = std::vector<std::int64_t>{4096};
  CHECK_FALSE(powersgd_matrix(trace, 2, 1).compressed);  // 4096 x 1: (4096 + 1) 2 > 4096
  trace.params[3].numel = 1;
  trace.params[3].shape = std::vector<std::int64_t>{};
  CHECK_FALSE(powersgd_matrix(trace, 3, 1).compressed);

  // The rank is capped at min(n, m, r): a 3 x 1000 matrix at r = 8 runs at rank 3, and
  // (3 + 1000) 3 2 = 6018 > 3000, so it stays uncompressed although r = 8 was asked.
  trace.params[2].numel = 3000;
  trace.params[2].shape = std::vector<std::int64_t>{3, 1000};
  m = powersgd_matrix(trace, 2, 8);
  CHECK(m.rank == 3);
  CHECK_FALSE(m.compressed);

  // In the Plan: P carries shape[0] r and Q (numel / shape[0]) r elements per matrix.
  auto plan_trace = testing::uniform_trace(2, 64 * 147, 1e-3, 2e-3, 0);
  for (auto& p : plan_trace.params) p.shape = std::vector<std::int64_t>{64, 3, 7, 7};
  Knobs k;
  k.broadcast_buffers = false;
  k.comm_hook = CommHook::powersgd;
  k.powersgd_rank = 2;
  const auto plan = make_strategy("bucketed")->plan(plan_trace, testing::ideal_star(4, 1e10, 2e-6), k);
  std::int64_t p_bytes = 0, q_bytes = 0;
  for (const auto& op : plan.ops) {
    if (op.kind != OpKind::allreduce) continue;
    if (op.name.size() >= 2 && op.name.compare(op.name.size() - 2, 2, ":p") == 0) p_bytes += op.bytes;
    if (op.name.size() >= 2 && op.name.compare(op.name.size() - 2, 2, ":q") == 0) q_bytes += op.bytes;
  }
  CHECK(p_bytes == 2 * 64 * 2 * 4);
  CHECK(q_bytes == 2 * 147 * 2 * 4);
}

TEST_CASE("the hook's own call runs on the compute stream, in order with backward", "[strategies][hooks]") {
  // DDP calls the hook from the autograd thread: fp16_compress_hook's cast of a bucket runs after
  // the backward op that readies it and before the next layer's backward (on a GPU, on the same
  // stream), and only the cast back runs beside backward, in the future's callback. Two layers,
  // one bucket each (1 MB buckets of 400,000 fp32 elements), casts at 1 GB/s: each cast moves
  // 400,000 x 6 bytes in 2.4 ms, so backward's second layer starts 2.4 ms after the first ends.
  const std::int64_t numel = 400'000;
  auto trace = testing::uniform_trace(2, numel, 1e-3, 2e-3, 0);
  auto cluster = testing::ideal_star(4, 1e12, 1e-9);
  cluster.device.memory_GBps = 1;
  Knobs k;
  k.broadcast_buffers = false;
  k.bucket_cap_bytes = 1'500'000;  // each 1.6 MB gradient closes a bucket of its own
  k.first_bucket_cap_bytes = 1'500'000;
  k.comm_hook = CommHook::fp16;
  auto plan = make_strategy("bucketed")->plan(trace, cluster, k);
  const auto tl = simulate(plan, cluster);
  auto op = [&](const std::string& name) { return testing::op_index(plan, name); };
  const double cast_s = numel * 6.0 / 1e9;
  const auto call0 = op("hook:call:bucket0"), call1 = op("hook:call:bucket1");
  CHECK(plan.ops[call0].stream == plan.stream_index("compute"));
  CHECK(plan.ops[call0].duration_s == Approx(cast_s));
  CHECK(tl.at(0, call0).start_s == Approx(tl.at(0, op("bwd:l1")).end_s));
  CHECK(tl.at(0, op("bwd:l0")).start_s == Approx(tl.at(0, call0).end_s));
  CHECK(tl.at(0, call1).start_s == Approx(tl.at(0, op("bwd:l0")).end_s));
  // One device does all of it: forward and backward (6 ms), both casts (4.8 ms) and bucket 0's
  // cast back (2.4 ms, which shares the device with bwd:l0 and ends before the second cast does).
  CHECK(tl.at(0, op("hook:decompress:bucket0")).end_s < tl.at(0, call1).end_s);
  CHECK(tl.at(0, call1).end_s == Approx(2e-3 + 4e-3 + 3 * cast_s));
  // The allreduce of bucket 0 waits for its cast; the cast back is off the compute stream.
  CHECK(tl.at(0, op("allreduce:bucket0")).start_s >= tl.at(0, call0).end_s - 1e-12);
  CHECK(plan.ops[op("hook:decompress:bucket0")].stream == plan.stream_index("comm_hook"));
}
