// Compute/communication interference (core/cluster.h InterferenceSpec, sim/interference.h)
// changes simulated time by exactly its closed form, identically in both fidelities.
//
// Two ranks on an ideal star: a compute op of C seconds and an allreduce that alone takes
// D = S / B (a 2-rank ring: each rank sends and receives half the buffer twice) start together.
// With compute slowdown f and collective slowdown g, each progresses at 1/f or 1/g of its speed
// while the other runs:
//   g only, C > D g: the collective runs slowed throughout and ends at D g;
//   g only, C < D:   it runs slowed for C, then alone: C + (D - C/g) = D + C (1 - 1/g);
//   f only, C > D:   compute runs slowed for D: D + (C - D/f) = C + D (1 - 1/f);
//   f and g, C > D g: the collective ends at D g, compute at D g + (C - D g / f).
#include <catch2/catch.hpp>

#include <tuple>

#include "core/cluster_json.h"
#include "core/error.h"
#include "core/chrome_trace.h"
#include "core/step_summary.h"
#include "core/timeline_json.h"
#include "sim/sim_engine.h"
#include "tests/test_support.h"

using namespace redsim;

namespace {

constexpr double kBandwidthBps = 1e9;
constexpr std::int64_t kBytes = 1'000'000;  // D = 1 ms alone
constexpr double kAloneS = 1e-3;

Plan compute_beside_allreduce(double compute_s) {
  Plan p = testing::single_allreduce_plan(2, kBytes, 1);
  PlanOp c;
  c.name = "fwd:layer";
  c.kind = OpKind::forward;
  c.stream = p.stream_index("compute");
  c.duration_s = compute_s;
  p.add(c);
  return p;
}

struct Ends {
  double collective_s, compute_s;
};

Ends ends(double compute_s, double f, double g, Fidelity fidelity, double latency_us = 0) {
  auto cluster = testing::ideal_star(2, kBandwidthBps, 0);
  cluster.interference.compute_slowdown = f;
  cluster.interference.collective_slowdown = g;
  cluster.interference.collective_latency_us = latency_us;
  const Plan plan = compute_beside_allreduce(compute_s);
  const Timeline tl = simulate(plan, cluster, SimOptions{false, fidelity});
  for (int r = 0; r < 2; ++r) {  // both ranks alike
    CHECK(tl.at(r, 0).end_s == Approx(tl.at(0, 0).end_s).epsilon(1e-12));
    CHECK(tl.at(r, 1).end_s == Approx(tl.at(0, 1).end_s).epsilon(1e-12));
  }
  return {tl.at(0, 0).end_s, tl.at(0, 1).end_s};
}

}  // namespace

TEST_CASE("interference stretches only the overlapped work, by its closed form", "[sim][interference]") {
  const Fidelity fid = GENERATE(Fidelity::exact, Fidelity::scalable);
  INFO((fid == Fidelity::exact ? "exact" : "scalable"));
  {
    const double D = kAloneS;
    SECTION("no interference: each takes its own time") {
      const auto e = ends(5e-3, 1, 1, fid);
      CHECK(e.collective_s == Approx(D).epsilon(1e-9));
      CHECK(e.compute_s == Approx(5e-3).epsilon(1e-9));
    }
    SECTION("collective slowed by compute throughout") {
      const auto e = ends(5e-3, 1, 1.5, fid);
      CHECK(e.collective_s == Approx(D * 1.5).epsilon(1e-9));
      CHECK(e.compute_s == Approx(5e-3).epsilon(1e-9));
    }
    SECTION("collective slowed while a short compute runs, then alone") {
      const double C = 0.4e-3, g = 2.0;
      const auto e = ends(C, 1, g, fid);
      CHECK(e.collective_s == Approx(D + C * (1 - 1 / g)).epsilon(1e-9));
      CHECK(e.compute_s == Approx(C).epsilon(1e-9));
    }
    SECTION("compute slowed while the collective runs") {
      const double C = 5e-3, f = 1.25;
      const auto e = ends(C, f, 1, fid);
      CHECK(e.collective_s == Approx(D).epsilon(1e-9));
      CHECK(e.compute_s == Approx(C + D * (1 - 1 / f)).epsilon(1e-9));
    }
    SECTION("both at once") {
      const double C = 5e-3, f = 1.25, g = 1.5;
      const auto e = ends(C, f, g, fid);
      CHECK(e.collective_s == Approx(D * g).epsilon(1e-9));
      CHECK(e.compute_s == Approx(D * g + (C - D * g / f)).epsilon(1e-9));
    }
    // A fixed delay L, in proportion to the part of the collective's network span that compute
    // overlapped: L beside compute throughout, L x C / D beside a compute of C < D.
    SECTION("a collective's latency beside compute throughout") {
      const double L = 0.3e-3;
      const auto e = ends(5e-3, 1, 1, fid, L * 1e6);
      CHECK(e.collective_s == Approx(D + L).epsilon(1e-9));
      CHECK(e.compute_s == Approx(5e-3).epsilon(1e-9));
    }
    SECTION("a collective's latency in proportion to the overlap") {
      const double L = 0.3e-3, C = 0.4e-3;
      const auto e = ends(C, 1, 1, fid, L * 1e6);
      CHECK(e.collective_s == Approx(D + L * C / D).epsilon(1e-9));
    }
    SECTION("latency and the rate together") {
      const double L = 0.3e-3, C = 5e-3, g = 1.5;
      const auto e = ends(C, 1, g, fid, L * 1e6);
      CHECK(e.collective_s == Approx(D * g + L).epsilon(1e-9));
    }
    SECTION("no compute beside: no latency") {
      const auto e = ends(0, 1, 1, fid, 300);
      CHECK(e.collective_s == Approx(D).epsilon(1e-9));
    }
  }
}

// The SM-share rule (InterferenceSpec::compute_slowdown_sm_share): beside a collective of b
// channels on a device of S SMs compute runs at 1 - b/S (one NCCL block per channel), so a
// compute op of C > D ends at D + (C - D (1 - b/S)) = C + D b/S; the blocks count at most half
// the SMs. The collective itself is untouched and takes D = S_bytes / B alone.
TEST_CASE("compute beside a collective runs on the SMs its channels leave", "[sim][interference]") {
  const Fidelity fid = GENERATE(Fidelity::exact, Fidelity::scalable);
  INFO((fid == Fidelity::exact ? "exact" : "scalable"));
  const double C = 5e-3;
  double stretched_s = -1;  // the step summary's compute beyond its durations
  auto run = [&](int channels, int sms, bool rule) {
    auto cluster = testing::ideal_star(2, kBandwidthBps, 0);
    cluster.device.sm_count = sms;
    cluster.interference.compute_slowdown_sm_share = rule;
    Plan plan = compute_beside_allreduce(C);
    plan.ops[0].channels = channels;
    const Timeline tl = simulate(plan, cluster, SimOptions{false, fid});
    stretched_s = summarize(plan, tl).compute_stretched_s;
    return Ends{tl.at(0, 0).end_s, tl.at(0, 1).end_s};
  };
  const double D = kAloneS;
  SECTION("one channel of four SMs") {
    const auto e = run(1, 4, true);
    CHECK(e.collective_s == Approx(D).epsilon(1e-9));
    CHECK(e.compute_s == Approx(C + D / 4).epsilon(1e-9));
    CHECK(stretched_s == Approx(D / 4).epsilon(1e-9));
  }
  SECTION("eight channels of 108 SMs (an A100 beside an 8-block allreduce)") {
    const auto e = run(8, 108, true);
    const double d = e.collective_s;  // channels split the buffer; the star's links are shared alike
    CHECK(d == Approx(D).epsilon(1e-6));
    CHECK(e.compute_s == Approx(C + d * 8 / 108).epsilon(1e-9));
  }
  SECTION("channels beyond half the SMs take half") {
    const auto e = run(3, 4, true);
    CHECK(e.compute_s == Approx(C + e.collective_s / 2).epsilon(1e-9));
  }
  SECTION("the SM count alone changes nothing") {
    const auto e = run(8, 8, false);
    CHECK(e.compute_s == Approx(C).epsilon(1e-9));
    CHECK(stretched_s == 0);
  }
}

TEST_CASE("interference factors are read strictly", "[core][cluster][interference]") {
  auto j = cluster_to_json(testing::ideal_star(2, kBandwidthBps, 0));
  j["interference"] = {{"compute_slowdown", 1.2}, {"collective_slowdown", 1.1}};
  const auto c = cluster_from_json(j, "c.json");
  CHECK(c.interference.compute_slowdown == 1.2);
  CHECK(c.interference.collective_slowdown == 1.1);
  CHECK(cluster_from_json(cluster_to_json(c), "c.json").interference.compute_slowdown == 1.2);  // round trip

  j["interference"]["collective_latency_us"] = 250;
  CHECK(cluster_from_json(cluster_to_json(cluster_from_json(j, "c.json")), "c.json").interference.collective_latency_us == 250);

  auto bad = j;
  bad["interference"]["collective_latency_us"] = -1;
  CHECK(testing::error_of([&] { cluster_from_json(bad, "c.json"); }).find("$.interference.collective_latency_us") !=
        std::string::npos);
  bad = j;
  bad["interference"]["compute_slowdown"] = 0.5;  // would speed compute up
  CHECK(testing::error_of([&] { cluster_from_json(bad, "c.json"); }).find("$.interference.compute_slowdown") !=
        std::string::npos);
  bad = j;
  bad["interference"]["compute_slowdown"] = "sm_share";  // the rule needs the device's SMs
  CHECK(testing::error_of([&] { cluster_from_json(bad, "c.json"); }).find("$.interference.compute_slowdown") !=
        std::string::npos);
  bad["device"]["sm_count"] = 0;
  CHECK(testing::error_of([&] { cluster_from_json(bad, "c.json"); }).find("$.device.sm_count") != std::string::npos);
  bad["device"]["sm_count"] = 108;
  const auto rule = cluster_from_json(bad, "c.json");
  CHECK(rule.interference.compute_slowdown_sm_share);
  CHECK(rule.device.sm_count == 108);
  const auto again = cluster_from_json(cluster_to_json(rule), "c.json");  // round trip
  CHECK(again.interference.compute_slowdown_sm_share);
  CHECK(again.device.sm_count == 108);
  bad["interference"]["compute_slowdown"] = "sm-share";
  CHECK(testing::error_of([&] { cluster_from_json(bad, "c.json"); }).find("\"sm_share\"") != std::string::npos);
  bad = j;
  bad["interference"]["sm_share"] = 0.2;
  CHECK(testing::error_of([&] { cluster_from_json(bad, "c.json"); }).find("sm_share") != std::string::npos);
}

TEST_CASE("the Perfetto trace shows what interference added to a compute op", "[sim][interference][perfetto]") {
  auto cluster = testing::ideal_star(2, kBandwidthBps, 0);
  cluster.interference.compute_slowdown = 1.25;
  const Plan plan = compute_beside_allreduce(5e-3);
  const Timeline tl = simulate(plan, cluster, SimOptions{false, Fidelity::exact});
  const auto trace = timeline_to_chrome_trace(plan, tl);
  int seen = 0;
  for (const auto& e : trace["traceEvents"])
    if (e.value("name", "") == "fwd:layer" && e.value("ph", "") == "X") {
      seen += 1;
      CHECK(e["args"]["alone_us"].get<double>() == Approx(5000).epsilon(1e-9));
      // D (1 - 1/f) with D = 1 ms beside the allreduce
      CHECK(e["args"]["slowed_by_collectives_us"].get<double>() == Approx(1000 * (1 - 1 / 1.25)).epsilon(1e-6));
    }
  CHECK(seen == 2);
}

// A CPU rank (no compute capability) reduces on the cores its compute runs on: the fp16
// allreduce's reductions, R = (S - S/2) / rate on 2 ranks, run first as device work sharing the
// rank equally with compute (each at half speed while both run), then the network part D.
//   C > R: the reduction ends at 2R, the collective at 2R + D, compute at C + R;
//   C < R: compute ends at 2C, the reduction at R + C, the collective at R + C + D.
// On a GPU the same rate is charged inside the collective's steps and compute is untouched.
TEST_CASE("on a CPU rank a collective's reductions share the device with compute", "[sim][interference]") {
  const Fidelity fid = GENERATE(Fidelity::exact, Fidelity::scalable);
  INFO((fid == Fidelity::exact ? "exact" : "scalable"));
  const double D = kAloneS, rate_GBps = 0.25;
  const double R = static_cast<double>(kBytes - kBytes / 2) / (rate_GBps * 1e9);  // 2 ms
  auto run = [&](double compute_s, double capability) {
    auto cluster = testing::ideal_star(2, kBandwidthBps, 0);
    cluster.device.reduce_GBps_by_dtype[DType::fp16] = rate_GBps;
    cluster.device.compute_capability = capability;
    Plan plan = compute_beside_allreduce(compute_s);
    plan.ops[0].dtype = DType::fp16;
    const Timeline tl = simulate(plan, cluster, SimOptions{false, fid});
    return Ends{tl.at(0, 0).end_s, tl.at(0, 1).end_s};
  };
  SECTION("compute longer than the reductions") {
    const double C = 5e-3;
    const auto e = run(C, 0);
    CHECK(e.collective_s == Approx(2 * R + D).epsilon(1e-9));
    CHECK(e.compute_s == Approx(C + R).epsilon(1e-9));
  }
  SECTION("compute shorter than the reductions") {
    const double C = 0.5e-3;
    const auto e = run(C, 0);
    CHECK(e.collective_s == Approx(R + C + D).epsilon(1e-9));
    CHECK(e.compute_s == Approx(2 * C).epsilon(1e-9));
  }
  SECTION("a GPU reduces beside its compute") {
    const double C = 5e-3;
    const auto e = run(C, 8.0);
    CHECK(e.collective_s == Approx(D + R).epsilon(1e-6));
    CHECK(e.compute_s == Approx(C).epsilon(1e-9));
  }
}

TEST_CASE("a device's compute ops on two streams share it", "[sim][interference]") {
  // The hook's callbacks (comm_hook stream) beside backward (compute stream): C1 and C2 < C1
  // start together and each runs at half speed while both do: C2 ends at 2 C2, C1 at C1 + C2.
  // Alike in both fidelities, with and without interference, on a CPU rank and on a GPU.
  const Fidelity fid = GENERATE(Fidelity::exact, Fidelity::scalable);
  const double f = GENERATE(1.0, 1.25);  // compute slowdown beside a collective: none runs here
  const double capability = GENERATE(0.0, 9.0);
  INFO((fid == Fidelity::exact ? "exact" : "scalable") << " slowdown " << f << " capability " << capability);
  const double C1 = 3e-3, C2 = 1e-3;
  Plan p;
  p.world_size = 2;
  for (auto [name, stream, s] : {std::tuple{"bwd:layer", "compute", C1}, std::tuple{"hook:decompress", "comm_hook", C2}}) {
    PlanOp c;
    c.name = name;
    c.kind = OpKind::backward;
    c.stream = p.stream_index(stream);
    c.duration_s = s;
    p.add(c);
  }
  auto cluster = testing::ideal_star(2, kBandwidthBps, 0);
  cluster.interference.compute_slowdown = f;
  cluster.device.compute_capability = capability;
  const Timeline tl = simulate(p, cluster, SimOptions{false, fid});
  CHECK(tl.at(0, 0).end_s == Approx(C1 + C2).epsilon(1e-9));
  CHECK(tl.at(0, 1).end_s == Approx(2 * C2).epsilon(1e-9));
}
