// Ring allreduce on ideal platforms against the alpha-beta closed form, and byte conservation.
#include <catch2/catch.hpp>

#include "core/step_summary.h"
#include "sim/sim_engine.h"
#include "tests/test_support.h"

using namespace redsim;

namespace {
// 2(N-1) steps, each one latency plus a chunk of S/N bytes at bandwidth B.
double ring_closed_form_s(int n, double bytes, double bandwidth_Bps, double latency_s) {
  return 2.0 * (n - 1) * latency_s + 2.0 * (n - 1) / n * bytes / bandwidth_Bps;
}
}  // namespace

TEST_CASE("ring allreduce on an ideal star matches 2(N-1)a + 2(N-1)/N S/B", "[sim][ring]") {
  const double B = 12.5e9;  // 100 Gb/s
  const double alpha = 5e-6;
  const std::int64_t S = 256LL * 1024 * 1024;
  for (int n : {2, 8, 64}) {
    for (int channels : {1, 2, 4}) {
      CAPTURE(n, channels);
      auto cluster = testing::ideal_star(n, B, alpha);
      auto plan = testing::single_allreduce_plan(n, S, channels);
      auto tl = simulate(plan, cluster);
      const double expected = ring_closed_form_s(n, static_cast<double>(S), B, alpha);
      for (int r = 0; r < n; ++r) {
        const auto& t = tl.at(r, 0);
        CHECK(t.start_s == 0.0);
        CHECK(t.end_s == Approx(expected).epsilon(0.01));
      }
      // Every rank sends 2(N-1)/N of the buffer (S divisible by N * channels here).
      for (int r = 0; r < n; ++r) CHECK(tl.at(r, 0).bytes_sent == 2 * (n - 1) * S / n);
    }
  }
}

TEST_CASE("ring allreduce inside an NVSwitch node matches the closed form", "[sim][ring]") {
  const double B = 450e9;
  const double alpha = 2e-6;
  const std::int64_t S = 100'000'000;
  for (int channels : {1, 2, 4}) {
    auto cluster = testing::ideal_nvswitch(8, B, alpha);
    auto tl = simulate(testing::single_allreduce_plan(8, S, channels), cluster);
    CHECK(tl.at(3, 0).end_s == Approx(ring_closed_form_s(8, static_cast<double>(S), B, alpha)).epsilon(0.01));
  }
}

TEST_CASE("bytes are conserved for sizes that do not divide evenly", "[sim][ring][conservation]") {
  const int n = 7, channels = 3;
  const std::int64_t S = 1'000'003;  // prime-ish: uneven channels and chunks
  auto cluster = testing::ideal_star(n, 1e10, 1e-6);
  auto tl = simulate(testing::single_allreduce_plan(n, S, channels), cluster);
  std::int64_t sent = 0, received = 0;
  for (int r = 0; r < n; ++r) {
    sent += tl.at(r, 0).bytes_sent;
    received += tl.at(r, 0).bytes_received;
  }
  // Each channel's ring moves every chunk 2(N-1) times in all: 2(N-1) * S over the channels.
  CHECK(sent == 2 * (n - 1) * S);
  CHECK(received == sent);
  // And per rank, from first principles. A star ring with one device per node is the identity
  // order for every channel, so rank r sits at ring position r. Each channel's buffer is split
  // into n pieces, the first (bytes mod n) one byte longer. In reduce-scatter step k (k = 0..n-2)
  // position p sends piece p-k; in allgather step k it sends piece p+1-k (mod n): 2(n-1) pieces
  // per channel, every piece but p+1 in the first half and every piece but p+2 in the second.
  for (int r = 0; r < n; ++r) {
    std::int64_t expected = 0;
    for (int c = 0; c < channels; ++c) {
      const std::int64_t channel_bytes = S / channels + (c < S % channels ? 1 : 0);
      const auto piece = [&](int i) {
        const int j = ((i % n) + n) % n;
        return channel_bytes / n + (j < channel_bytes % n ? 1 : 0);
      };
      for (int k = 0; k < n - 1; ++k) expected += piece(r - k) + piece(r + 1 - k);
    }
    CHECK(tl.at(r, 0).bytes_sent == expected);
  }
}

TEST_CASE("per-collective launch overhead is added once per collective", "[sim][ring]") {
  auto cluster = testing::ideal_star(4, 1e10, 1e-6);
  cluster.collective_launch_us = 20;
  auto tl = simulate(testing::single_allreduce_plan(4, 4'000'000, 1), cluster);
  CHECK(tl.at(0, 0).end_s == Approx(20e-6 + ring_closed_form_s(4, 4e6, 1e10, 1e-6)).epsilon(1e-6));
}

TEST_CASE("a per-kind launch overhead replaces the shared one for that kind only", "[sim][ring]") {
  auto cluster = testing::ideal_star(4, 1e10, 1e-6);
  cluster.collective_launch_us = 20;
  cluster.collective_launch_us_by_kind[OpKind::reduce] = 300;
  auto allreduce = simulate(testing::single_allreduce_plan(4, 4'000'000, 1), cluster);
  CHECK(allreduce.at(0, 0).end_s == Approx(20e-6 + ring_closed_form_s(4, 4e6, 1e10, 1e-6)).epsilon(1e-6));
  // The same reduce with and without its own figure differs by exactly the difference, 280 us.
  const auto plan = testing::single_collective_plan(4, OpKind::reduce, Algorithm::ring, 4'000'000, 1, 0);
  auto own = simulate(plan, cluster);
  cluster.collective_launch_us_by_kind.clear();
  auto shared = simulate(plan, cluster);
  CHECK(testing::end_of(own) - testing::end_of(shared) == Approx(280e-6).epsilon(1e-6));
}

TEST_CASE("oversubscribed fat-tree uplinks slow a cross-leaf ring", "[sim][ring][fat-tree]") {
  // 4 nodes, 2 per leaf: the ring crosses each leaf uplink once per direction. With 4:1
  // oversubscription the uplink has 2 * B / 4 = B/2, so each step's cross-leaf hop runs at B/2.
  const double B = 1e10;
  auto cluster = testing::ideal_star(4, B, 1e-6);
  cluster.inter.topology = InterTopology::fat_tree;
  cluster.inter.nodes_per_leaf = 2;
  cluster.inter.oversubscription = 4.0;
  const std::int64_t S = 400'000'000;
  auto tl = simulate(testing::single_allreduce_plan(4, S, 1), cluster);
  const double expected = 2.0 * 3 * 1e-6 + 2.0 * 3 / 4 * static_cast<double>(S) / (B / 2);
  CHECK(tl.at(0, 0).end_s == Approx(expected).epsilon(0.01));
}
