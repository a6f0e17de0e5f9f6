// The folded Timeline (core/timeline.h): equal records across ranks are stored once, read back
// per rank, unfolded on write, and cross a process boundary as stored.
#include <catch2/catch.hpp>

#include <cstring>
#include <stdexcept>
#include <utility>

#include "core/timeline.h"

using namespace redsim;

TEST_CASE("a Timeline folds ops whose ranks agree and keeps the others per rank", "[core][timeline]") {
  const int world = 1000;
  Timeline tl = Timeline::folded("simulated", world, 3);
  std::vector<OpTiming> same(world, OpTiming{1.0, 2.0, 3.0, 40, 40});
  tl.set_op(0, same);
  std::vector<OpTiming> chain = same;
  for (int r = 0; r < world; ++r) chain[static_cast<std::size_t>(r)].end_s = 3.0 + r * 1e-3;  // a chain's ranks end in turn
  tl.set_op(1, chain);
  CHECK(tl.op_is_folded(0));
  CHECK_FALSE(tl.op_is_folded(1));
  CHECK(tl.op_is_folded(2));  // never set: one zero record
  // 1 + world + 1 records instead of 3 * world.
  CHECK(tl.stored_records() == static_cast<std::size_t>(world + 2));
  const Timeline& view = tl;  // reading through the non-const at() would unfold the op
  CHECK(view.at(999, 0).bytes_sent == 40);
  CHECK(view.at(500, 1).end_s == Approx(3.5));
  CHECK(tl.op_is_folded(0));
  CHECK(tl.last_end_s() == Approx(3.0 + 999e-3));

  Timeline back = Timeline::folded("simulated", world, 3);
  back.deserialize(tl.serialize());
  for (int r : {0, 17, 999})
    for (std::size_t op = 0; op < 3; ++op) CHECK(back.at(r, op) == tl.at(r, op));
  CHECK(back.stored_records() == tl.stored_records());
  CHECK_THROWS(back.deserialize(tl.serialize().substr(0, 100)));

  // Writing one rank's record through at() unfolds that op only.
  tl.mutable_at(7, 0).end_s = 9.0;
  CHECK_FALSE(tl.op_is_folded(0));
  CHECK(tl.at(7, 0).end_s == 9.0);
  CHECK(tl.at(8, 0).end_s == 3.0);
  tl.mutable_at(7, 0).end_s = 3.0;
  tl.fold();
  CHECK(tl.op_is_folded(0));
}

TEST_CASE("a dense Timeline is one record per rank until folded", "[core][timeline]") {
  Timeline tl("measured", 4, 2);
  CHECK(tl.stored_records() == 8);
  tl.fold();  // all zero: every op folds
  CHECK(tl.stored_records() == 2);
}

TEST_CASE("an op with a few distinct records keeps them once and an index per rank", "[core][timeline]") {
  // A tree's ranks end by depth: here three depths over 1000 ranks.
  const int world = 1000;
  Timeline tl = Timeline::folded("simulated", world, 2);
  std::vector<OpTiming> tree(world);
  for (int r = 0; r < world; ++r) {
    const int depth = r == 0 ? 0 : (r < 10 ? 1 : 2);
    tree[static_cast<std::size_t>(r)] = OpTiming{1.0, 1.0, 2.0 - 0.1 * depth, 100 * (3 - depth), 100 * (3 - depth)};
  }
  tl.set_op(0, tree);
  CHECK(tl.op_is_indexed(0));
  CHECK_FALSE(tl.op_is_folded(0));
  CHECK(tl.op_records(0).size() == 3);
  const Timeline& view = tl;  // reading through the non-const at() would unfold the op
  for (int r : {0, 5, 9, 10, 999}) CHECK(view.at(r, 0) == tree[static_cast<std::size_t>(r)]);
  CHECK(tl.op_is_indexed(0));
  CHECK(tl.last_end_s() == Approx(2.0));

  Timeline back = Timeline::folded("simulated", world, 2);
  back.deserialize(tl.serialize());
  CHECK(back.op_is_indexed(0));
  for (int r = 0; r < world; ++r) CHECK(std::as_const(back).at(r, 0) == tree[static_cast<std::size_t>(r)]);
  // An index naming a record that is not there is refused, not read out of bounds.
  std::string bad = tl.serialize();
  bad[1 + sizeof(std::uint32_t) + 3 * sizeof(OpTiming)] = 7;  // rank 0's index -> 7 of 3 records
  CHECK_THROWS(back.deserialize(bad));

  // Writing through at() gives the op a record per rank again; fold() indexes it back.
  tl.mutable_at(10, 0).end_s = 5.0;
  CHECK_FALSE(tl.op_is_indexed(0));
  CHECK(tl.op_records(0).size() == static_cast<std::size_t>(world));
  CHECK(view.at(11, 0).end_s == Approx(1.8));
  tl.fold();
  CHECK(tl.op_is_indexed(0));
  CHECK(tl.op_records(0).size() == 4);
  CHECK(view.at(10, 0).end_s == 5.0);
}

TEST_CASE("a sparse op keeps one record for every rank and a few exceptions", "[core][timeline]") {
  const int world = 4096;
  Timeline tl = Timeline::folded("simulated", world, 2);
  const OpTiming every{1.0, 1.0, 3.0, 100, 100};
  OpTiming head = every, tail = every;
  head.bytes_received = 0;  // a chain's head receives nothing, its tail sends nothing
  tail.bytes_sent = 0;
  // Unsorted, and one "exception" equal to the default, which is dropped.
  tl.set_op_sparse(0, every, {{4000, tail}, {7, head}, {12, every}});
  REQUIRE(tl.op_is_sparse(0));
  CHECK(tl.op_exception_ranks(0) == std::vector<int>{7, 4000});
  CHECK(tl.stored_records() == 3 + 1);
  const Timeline& view = tl;
  CHECK(view.at(7, 0) == head);
  CHECK(view.at(4000, 0) == tail);
  CHECK(view.at(12, 0) == every);
  CHECK(view.at(4095, 0) == every);
  CHECK(tl.op_times_uniform(0));  // the records differ in bytes only

  // Across the process boundary as stored; a corrupt rank list is refused.
  Timeline back = Timeline::folded("simulated", world, 2);
  back.deserialize(tl.serialize());
  CHECK(back.op_is_sparse(0));
  for (int r : {0, 7, 12, 4000, 4095}) CHECK(back.at(r, 0) == tl.at(r, 0));
  std::string bad = tl.serialize();
  const int swapped[2] = {4000, 7};  // the two ranks sit right after the sparse op's 3 records
  std::memcpy(bad.data() + 1 + 4 + 3 * sizeof(OpTiming), swapped, sizeof swapped);
  CHECK_THROWS(back.deserialize(bad));

  // Writing one rank's record unfolds the op into a record per rank, exceptions kept.
  tl.mutable_at(5, 0).end_s = 4.0;
  CHECK_FALSE(tl.op_is_sparse(0));
  CHECK(tl.at(7, 0) == head);
  CHECK(tl.at(5, 0).end_s == 4.0);
  CHECK_FALSE(tl.op_times_uniform(0));

  // More exceptions than a quarter of the ranks: stored as set_op would store them.
  std::vector<std::pair<int, OpTiming>> many;
  for (int r = 0; r < world / 2; ++r) many.emplace_back(r, tail);
  tl.set_op_sparse(1, every, many);
  CHECK_FALSE(tl.op_is_sparse(1));
  CHECK(tl.at(world / 2 - 1, 1) == tail);
  CHECK(tl.at(world / 2, 1) == every);
  CHECK_THROWS_AS(tl.set_op_sparse(1, every, {{3, tail}, {3, head}}), std::logic_error);
  CHECK_THROWS_AS(tl.set_op_sparse(1, every, {{world, tail}}), std::logic_error);
}
