// flat and bucketed: Plans and simulated step times against closed forms.
#include <catch2/catch.hpp>

#include "core/step_summary.h"
#include "sim/sim_engine.h"
#include "strategies/strategy.h"
#include "tests/test_support.h"

using namespace redsim;

namespace {
double ring_s(int n, double bytes, double B, double alpha) {
  return 2.0 * (n - 1) * alpha + 2.0 * (n - 1) / n * bytes / B;
}
}  // namespace

TEST_CASE("flat is compute, then one allreduce of every gradient, then the optimizer", "[strategies][flat]") {
  const int n = 8, layers = 10;
  const std::int64_t numel = 1'000'000;
  const double fwd = 1e-3, bwd = 2e-3, opt = 0.5e-3, B = 12.5e9, alpha = 5e-6;
  auto trace = testing::uniform_trace(layers, numel, fwd, bwd, opt);
  auto cluster = testing::ideal_star(n, B, alpha);
  Knobs k;
  k.strategy = "flat";
  auto plan = make_strategy("flat")->plan(trace, cluster, k);
  int collectives = 0;
  for (const auto& op : plan.ops) collectives += op_kind_is_collective(op.kind) ? 1 : 0;
  CHECK(collectives == 1);
  auto s = summarize(plan, simulate(plan, cluster));
  const double expected = layers * (fwd + bwd) + ring_s(n, layers * numel * 4.0, B, alpha) + opt;
  CHECK(s.step_time_s == Approx(expected).epsilon(0.01));
  CHECK(s.exposed_comm_s == Approx(ring_s(n, layers * numel * 4.0, B, alpha)).epsilon(0.01));
  CHECK(s.bytes_sent_per_rank == 2 * (n - 1) * layers * numel * 4 / n);
}

TEST_CASE("bucketed hides communication behind backward and beats flat", "[strategies][bucketed]") {
  // 10 layers of 4 MB gradients; each bucket's allreduce (~0.6 ms) fits in one layer's 2 ms backward.
  const int n = 8, layers = 10;
  const std::int64_t numel = 1'000'000;
  const double fwd = 1e-3, bwd = 2e-3, opt = 0.5e-3, B = 12.5e9, alpha = 5e-6;
  auto trace = testing::uniform_trace(layers, numel, fwd, bwd, opt);
  auto cluster = testing::ideal_star(n, B, alpha);
  Knobs k;
  k.bucket_cap_bytes = numel * 4;  // one layer per bucket
  k.first_bucket_cap_bytes = numel * 4;
  auto bucketed = make_strategy("bucketed")->plan(trace, cluster, k);
  auto flat = make_strategy("flat")->plan(trace, cluster, k);
  auto sb = summarize(bucketed, simulate(bucketed, cluster));
  auto sf = summarize(flat, simulate(flat, cluster));
  CHECK(sb.collectives.size() == static_cast<std::size_t>(layers));
  CHECK(sb.step_time_s < sf.step_time_s);
  // Only the last bucket (made by the last backward op) is exposed.
  const double one_bucket = ring_s(n, numel * 4.0, B, alpha);
  CHECK(sb.step_time_s == Approx(layers * (fwd + bwd) + one_bucket + opt).epsilon(0.01));
  CHECK(sb.exposed_comm_s == Approx(one_bucket).epsilon(0.01));
  // Each bucket starts right when its layer's backward ends.
  for (int b = 0; b < layers; ++b)
    CHECK(sb.collectives[static_cast<std::size_t>(b)].start_s == Approx(layers * fwd + (b + 1) * bwd).epsilon(1e-9));
  // Same bytes either way: bucketing changes timing, not volume.
  CHECK(sb.bytes_sent_per_rank == sf.bytes_sent_per_rank);
}

TEST_CASE("bucketed with one bucket equals flat", "[strategies][bucketed]") {
  auto trace = testing::uniform_trace(6, 500'000, 1e-3, 2e-3, 1e-4);
  auto cluster = testing::ideal_star(4, 1e10, 2e-6);
  Knobs k;
  k.bucket_cap_bytes = 1LL << 40;
  k.first_bucket_cap_bytes = 1LL << 40;
  auto b = make_strategy("bucketed")->plan(trace, cluster, k);
  auto f = make_strategy("flat")->plan(trace, cluster, k);
  CHECK(summarize(b, simulate(b, cluster)).step_time_s == Approx(summarize(f, simulate(f, cluster)).step_time_s));
}

TEST_CASE("communication that cannot hide leaves compute plus comm", "[strategies][bucketed]") {
  // Backward so short that the comm stream is the bottleneck: the step is bounded below by the
  // serial sum of all bucket allreduces after the first bucket becomes ready.
  const int n = 4, layers = 5;
  const std::int64_t numel = 10'000'000;
  const double B = 1e10, alpha = 1e-6;
  auto trace = testing::uniform_trace(layers, numel, 1e-6, 1e-6, 0);
  auto cluster = testing::ideal_star(n, B, alpha);
  Knobs k;
  k.bucket_cap_bytes = numel * 4;
  k.first_bucket_cap_bytes = numel * 4;
  auto plan = make_strategy("bucketed")->plan(trace, cluster, k);
  auto s = summarize(plan, simulate(plan, cluster));
  const double comm = layers * ring_s(n, numel * 4.0, B, alpha);
  CHECK(s.step_time_s == Approx(layers * 1e-6 + 1e-6 + comm).epsilon(0.01));
}

TEST_CASE("unknown strategy names are input errors", "[strategies]") {
  CHECK_THROWS_WITH(make_strategy("zero3"), Catch::Contains("unknown strategy") && Catch::Contains("bucketed"));
}
