// Gloo's binomial broadcast (collectives/shapes.h binomial_tree, sim/binomial_broadcast.h): the
// tree as gloo/broadcast.cc builds it, and its cost on an ideal star at both fidelities. A rank
// sends to all its children at once (Gloo's sends are asynchronous), so they share its link: a
// rank with c children that has the buffer at T gets it to each child at T + a + c S/B. On
// N = 2^D ranks the slowest path goes root (D children) -> vrank 1 (D-1) -> vrank 3 -> ...:
// D a + D(D+1)/2 S/B. Every rank but the root receives S once: (N-1) S bytes in all.
#include <catch2/catch.hpp>

#include "collectives/shapes.h"
#include "sim/sim_engine.h"
#include "tests/test_support.h"

using namespace redsim;
using testing::end_of;
using testing::sent_by_all;

TEST_CASE("Gloo's binomial tree: round i sends to the rank i bits up, relative to the root", "[collectives][binomial]") {
  const auto four = binomial_tree(4, 0);
  CHECK(four.parent == std::vector<int>{-1, 0, 0, 1});
  CHECK(four.children[0] == std::vector<int>{1, 2});
  CHECK(four.children[1] == std::vector<int>{3});
  CHECK(four.children[2].empty());
  // Five ranks from root 2 (virtual ranks r - 2 mod 5): v0 sends to v1, v2, v4 (ranks 3, 4, 1);
  // v1 (rank 3) to v3 (rank 0).
  const auto five = binomial_tree(5, 2);
  CHECK(five.parent == std::vector<int>{3, 2, -1, 2, 2});
  CHECK(five.children[2] == std::vector<int>{3, 4, 1});
  CHECK(five.children[3] == std::vector<int>{0});
}

TEST_CASE("Gloo's binomial broadcast costs D a + D(D+1)/2 S/B on 2^D ranks at both fidelities", "[sim][binomial]") {
  const double B = 1e10, a = 4e-6;
  const std::int64_t S = 8LL * 1024 * 1024;
  for (int D : {1, 2, 3, 4}) {
    const int n = 1 << D;
    for (int root : {0, n - 1}) {
      for (auto fidelity : {Fidelity::exact, Fidelity::scalable}) {
        CAPTURE(n, root, static_cast<int>(fidelity));
        SimOptions o;
        o.fidelity = fidelity;
        const auto tl = simulate(testing::single_collective_plan(n, OpKind::broadcast, Algorithm::binomial, S, 1, root),
                                 testing::ideal_star(n, B, a), o);
        CHECK(end_of(tl) == Approx(D * a + D * (D + 1) / 2.0 * static_cast<double>(S) / B).epsilon(0.01));
        CHECK(sent_by_all(tl) == (n - 1) * S);
      }
    }
  }
}
