// redsim collective times nccl-tests' iterations as nccl-tests runs them: queued back to back,
// timed together (nccl-tests src/common.cu: -n iterations, default 20, no barrier between them).
// A chain's later iterations overlap its fill; closed forms from the chain's store and forward.
#include <catch2/catch.hpp>

#include <algorithm>

#include "collectives/collective_model.h"
#include "core/error.h"
#include "sim/collective_sweep.h"
#include "sim/sim_engine.h"
#include "tests/test_support.h"

using namespace redsim;

namespace {

// One node of 8 A100-like GPUs on an NVSwitch as NCCL sees it (240 GB/s ports, 0.5 us).
ClusterSpec a100_node(int gpus = 8) {
  auto c = testing::ideal_nvswitch(gpus, 240e9, 0.5e-6);
  c.library = CollectiveLibrary::nccl;
  c.device.compute_capability = 8.0;
  return c;
}

SweepOptions one_size(OpKind kind, std::int64_t bytes, CollectiveRequest request, int iters, Fidelity fidelity) {
  SweepOptions o;
  o.ops = {kind};
  o.sizes = {bytes};
  o.request = request;
  o.iters = iters;
  o.fidelity = fidelity;
  return o;
}

// The reference: a chain's Simple steps as rendezvous, iterated. Rank k (0 heads, N - 1 ends)
// takes chunk r in its step r and passes chunk r - 1 on in the same step (the head sends chunk
// r in its step r); a step ends when both its transfers have, and a transfer starts when both
// ends have posted it (their steps began) and lasts w for chunk 0, v for the others. Each rank
// starts an iteration b after it ended the previous one. Returns each iteration's last end.
std::vector<double> reference_chain_ends_s(int N, int C, double w, double v, double b, int iterations) {
  auto steps = [&](int k) { return k == 0 || k == N - 1 ? C : C + 1; };
  auto send_step = [&](int k, int chunk) { return k == 0 ? chunk : chunk + 1; };
  std::vector<double> start_s(static_cast<std::size_t>(N), 0.0), ends;
  for (int it = 0; it < iterations; ++it) {
    // begin[k][r]: when rank k's step r begins; relaxed to the fixed point (the steps form a DAG).
    std::vector<std::vector<double>> begin(static_cast<std::size_t>(N));
    for (int k = 0; k < N; ++k) begin[static_cast<std::size_t>(k)].assign(static_cast<std::size_t>(steps(k) + 1), start_s[static_cast<std::size_t>(k)] + b);
    for (bool changed = true; changed;) {
      changed = false;
      for (int k = 0; k < N; ++k)
        for (int r = 0; r < steps(k); ++r) {
          auto& bk = begin[static_cast<std::size_t>(k)];
          double end = bk[static_cast<std::size_t>(r)];
          if (k > 0 && r < C)  // receive chunk r from k - 1
            end = std::max(end, std::max(bk[static_cast<std::size_t>(r)], begin[static_cast<std::size_t>(k - 1)][static_cast<std::size_t>(send_step(k - 1, r))]) + (r == 0 ? w : v));
          const int chunk = k == 0 ? r : r - 1;
          if (k < N - 1 && chunk >= 0 && chunk < C)  // send it to k + 1
            end = std::max(end, std::max(bk[static_cast<std::size_t>(r)], begin[static_cast<std::size_t>(k + 1)][static_cast<std::size_t>(chunk)]) + (chunk == 0 ? w : v));
          if (end > bk[static_cast<std::size_t>(r + 1)]) bk[static_cast<std::size_t>(r + 1)] = end, changed = true;
        }
    }
    double last = 0;
    for (int k = 0; k < N; ++k) {
      start_s[static_cast<std::size_t>(k)] = begin[static_cast<std::size_t>(k)][static_cast<std::size_t>(steps(k))];
      last = std::max(last, start_s[static_cast<std::size_t>(k)]);
    }
    ends.push_back(last);
  }
  return ends;
}

}  // namespace

TEST_CASE("nccl-tests' back-to-back iterations overlap a chain's fill, as the rendezvous recurrence says",
          "[collectives][protocol][sweep]") {
  // A Simple broadcast on one channel: C chunks of 512 KiB down a chain of N - 1 hops, as in
  // "Simple chains store and forward" (test_collective_model.cpp): the first chunk crosses a hop
  // in w = 6 us + chunk, the others in v = 0.5 us + chunk, after 8.4 us of base latency. Alone
  // it takes 8.4 + (N - 1) w + (C - 1) v. Back to back, each rank starts the next iteration
  // when it is done with this one, and the chain's fill mostly overlaps: the mean of n
  // iterations is computed here from the step recurrence (reference_chain_ends_s).
  const double w = 6e-6 + 524288 / 240e9, v = 0.5e-6 + 524288 / 240e9, b = 8.4e-6;
  const CollectiveRequest simple_1ch{Algorithm::ring, Protocol::simple, 1};
  for (const int N : {4, 8})
    for (const int C : {2, 8}) {
      auto c = a100_node(N);
      const auto ends = reference_chain_ends_s(N, C, w, v, b, 3);
      const double once_s = ends[0], later_s = ends[2] - ends[1];
      CHECK(once_s == Approx(b + (N - 1) * w + (C - 1) * v));
      for (const Fidelity f : {Fidelity::exact, Fidelity::scalable})
        for (const int n : {1, 2, 20}) {
          CAPTURE(N, C, fidelity_name(f), n);
          const auto rows = collective_sweep(c, one_size(OpKind::broadcast, std::int64_t{C} << 19, simple_1ch, n, f));
          REQUIRE(rows.size() == 1);
          CHECK(rows[0].time_us * 1e-6 == Approx((once_s + (n - 1) * later_s) / n).epsilon(0.01));
        }
    }
}

TEST_CASE("a ring's back-to-back iterations barely overlap: every rank waits on every other each step",
          "[collectives][protocol][sweep]") {
  // Why the sweep queues copies of chains only: three ring allreduces queued without a
  // rendezvous, on the exact engine, take three times one (within 2%).
  const auto c = a100_node();
  auto plan = testing::single_collective_plan(8, OpKind::allreduce, Algorithm::ring, 1 << 20, 1, -1);
  plan.ops[0].request = {Algorithm::ring, Protocol::ll, 0};
  for (int k = 1; k < 3; ++k) {
    PlanOp copy = plan.ops[0];
    copy.rendezvous = false;
    copy.deps = {plan.ops.back().id};
    plan.add(std::move(copy));
  }
  choose_collectives(plan, c);
  const auto tl = simulate(plan, c, SimOptions{false, Fidelity::exact});
  double first_end = 0, last_end = 0;
  for (int r = 0; r < 8; ++r) {
    first_end = std::max(first_end, tl.at(r, 0).end_s);
    last_end = std::max(last_end, tl.at(r, 2).end_s);
  }
  CHECK((last_end - first_end) / 2 == Approx(first_end).epsilon(0.02));
}

TEST_CASE("iterations (-n) outside 1 .. 1000000 are bad input", "[sweep]") {
  const auto c = a100_node();
  CHECK_THROWS_AS(collective_sweep(c, one_size(OpKind::broadcast, 1 << 20, {}, 0, Fidelity::exact)), InputError);
  CHECK_THROWS_AS(collective_sweep(c, one_size(OpKind::broadcast, 1 << 20, {}, 1000001, Fidelity::exact)), InputError);
}

TEST_CASE("the sweep's -g must divide the ranks and fit in a node", "[sweep]") {
  // 8 ranks on one node: nccl-tests' ranks are processes x g, and a process's GPUs are its node's.
  const auto c = a100_node();
  auto o = one_size(OpKind::allreduce, 1 << 20, {}, 20, Fidelity::exact);
  for (int g : {1, 2, 4, 8}) {
    o.gpus_per_process = g;
    CHECK_NOTHROW(collective_sweep(c, o));
  }
  for (int g : {3, 9, 16}) {
    o.gpus_per_process = g;
    CHECK_THAT(testing::error_of([&] { collective_sweep(c, o); }), Catch::StartsWith("-g " + std::to_string(g) + ": expected a divisor"));
  }
}
