// Pure units of realexec: value patterns, buffer layout, the memory budget, launcher
// environments, rank reports and their alignment into a Timeline, the TCP store.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <thread>
#include <vector>

#include "core/statistics.h"
#include "realexec/buffer_pattern.h"
#include "realexec/exec_layout.h"
#include "realexec/half.h"
#include "realexec/interference_bench.h"
#include "realexec/launch_env.h"
#include "realexec/measurement.h"
#include "realexec/memory_budget.h"
#include "realexec/tcp_store.h"
#include "realexec/traffic.h"

using namespace redsim;
using namespace redsim::realexec;

namespace {

// Simulates a collective on host buffers: what a correct backend would leave on each rank.
std::vector<std::vector<char>> simulate(const ValuePattern& p, OpKind kind, ReduceOp op, DType dt, int n, int root,
                                        std::int64_t count, const std::vector<Segment>& shards) {
  const auto es = dtype_size_bytes(dt);
  std::vector<std::vector<char>> bufs(static_cast<std::size_t>(n), std::vector<char>(static_cast<std::size_t>(count * es)));
  for (int r = 0; r < n; ++r) p.fill(bufs[static_cast<std::size_t>(r)].data(), count, r, shards);
  std::vector<float> result(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    float acc = decode_value(bufs[0].data(), i, dt);
    for (int r = 1; r < n; ++r) {
      const float x = decode_value(bufs[static_cast<std::size_t>(r)].data(), i, dt);
      acc = op == ReduceOp::prod ? acc * x : op == ReduceOp::max ? std::max(acc, x) : op == ReduceOp::min ? std::min(acc, x) : acc + x;
    }
    if (op == ReduceOp::avg) acc /= static_cast<float>(n);
    if (kind == OpKind::broadcast) acc = decode_value(bufs[static_cast<std::size_t>(root)].data(), i, dt);
    if (kind == OpKind::allgather) {
      for (int o = 0; o < n; ++o)
        if (i >= shards[static_cast<std::size_t>(o)].offset &&
            i < shards[static_cast<std::size_t>(o)].offset + shards[static_cast<std::size_t>(o)].count)
          acc = decode_value(bufs[static_cast<std::size_t>(o)].data(), i, dt);
    }
    result[static_cast<std::size_t>(i)] = acc;
  }
  for (int r = 0; r < n; ++r)
    for (std::int64_t i = 0; i < count; ++i) {
      store_value_bits(bufs[static_cast<std::size_t>(r)].data(), i, dt, encode_value(result[static_cast<std::size_t>(i)], dt));
    }
  return bufs;
}

}  // namespace

TEST_CASE("value patterns: a correct collective verifies, a damaged one does not", "[realexec][pattern]") {
  for (DType dt : {DType::fp32, DType::fp16, DType::bf16})
    for (OpKind kind : {OpKind::allreduce, OpKind::reduce, OpKind::reduce_scatter, OpKind::broadcast, OpKind::allgather})
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min, ReduceOp::prod})
        for (int n : {2, 3, 4, 64}) {
          INFO(dtype_name(dt) << " " << op_kind_name(kind) << " " << reduce_op_name(op) << " " << n << " ranks");
          const std::int64_t count = 257;
          std::vector<Segment> shards;
          for (int r = 0; r < n; ++r) shards.push_back({split_offset(count, n, r), split_piece(count, n, r)});
          const int root = n / 2;
          ValuePattern p(kind, op, dt, n, root, 17);
          auto bufs = simulate(p, kind, op, dt, n, root, count, shards);
          for (int r = 0; r < n; ++r) REQUIRE_FALSE(p.check(bufs[static_cast<std::size_t>(r)].data(), count, r, shards));
          // Damage one element that `rank` must check: verification must say which.
          const int rank = kind == OpKind::reduce ? root : n - 1;
          const std::int64_t i = kind == OpKind::reduce_scatter ? shards[static_cast<std::size_t>(rank)].offset : 100;
          if (kind == OpKind::reduce_scatter && shards[static_cast<std::size_t>(rank)].count == 0) continue;
          const float wrong = decode_value(bufs[static_cast<std::size_t>(rank)].data(), i, dt) + 1.0f;
          store_value_bits(bufs[static_cast<std::size_t>(rank)].data(), i, dt, encode_value(wrong, dt));
          auto bad = p.check(bufs[static_cast<std::size_t>(rank)].data(), count, rank, shards);
          REQUIRE(bad);
          CHECK_THAT(*bad, Catch::Contains("element " + std::to_string(i)));
        }
}

TEST_CASE("value patterns: broadcasts and allgathers of integer buffers", "[realexec][pattern]") {
  for (DType dt : {DType::int64, DType::int32, DType::uint8, DType::bool8, DType::fp64})
    for (OpKind kind : {OpKind::broadcast, OpKind::allgather}) {
      INFO(dtype_name(dt) << " " << op_kind_name(kind));
      const int n = 3;
      const std::int64_t count = 50;
      std::vector<Segment> shards;
      for (int r = 0; r < n; ++r) shards.push_back({split_offset(count, n, r), split_piece(count, n, r)});
      ValuePattern p(kind, ReduceOp::sum, dt, n, 1, 9);
      auto bufs = simulate(p, kind, ReduceOp::sum, dt, n, 1, count, shards);
      for (int r = 0; r < n; ++r) CHECK_FALSE(p.check(bufs[static_cast<std::size_t>(r)].data(), count, r, shards));
      store_value_bits(bufs[0].data(), 7, dt, encode_value(ValuePattern::kPoison, dt));
      CHECK(p.check(bufs[0].data(), count, 0, shards));
    }
}

TEST_CASE("value patterns: a missing contribution is caught", "[realexec][pattern]") {
  // A sum that forgot rank 2's contribution.
  const int n = 4;
  const std::int64_t count = 64;
  ValuePattern p(OpKind::allreduce, ReduceOp::sum, DType::bf16, n, -1, 3);
  std::vector<std::vector<std::uint16_t>> in(n, std::vector<std::uint16_t>(count));
  for (int r = 0; r < n; ++r) p.fill(in[static_cast<std::size_t>(r)].data(), count, r, {});
  std::vector<std::uint16_t> out(count);
  for (std::int64_t i = 0; i < count; ++i) {
    float s = 0;
    for (int r = 0; r < n; ++r)
      if (r != 2) s += bf16_to_float(in[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)]);
    out[static_cast<std::size_t>(i)] = float_to_bf16(s);
  }
  CHECK(p.check(out.data(), count, 0, {}));
  // Allgather poison: a shard that never arrived still holds the poison value.
  std::vector<Segment> shards{{0, 10}, {10, 10}};
  ValuePattern g(OpKind::allgather, ReduceOp::sum, DType::fp32, 2, -1, 0);
  std::vector<float> mine(20);
  g.fill(mine.data(), 20, 0, shards);
  CHECK(mine[15] == ValuePattern::kPoison);
  CHECK(g.check(mine.data(), 20, 0, shards));
}

TEST_CASE("value patterns stay exact for many ranks in bf16", "[realexec][pattern]") {
  // 64 ranks summing bf16: values must stay within bf16's exact integers (256).
  ValuePattern p(OpKind::allreduce, ReduceOp::sum, DType::bf16, 64, -1, 0);
  for (std::int64_t i = 0; i < 16; ++i) {
    const float want = *p.expected(i, 0, {});
    CHECK(want <= 256.0f);
    CHECK(bf16_to_float(float_to_bf16(want)) == want);
  }
}

TEST_CASE("buffer layout: channels and shards follow the split rule", "[realexec][layout]") {
  PlanOp op;
  op.id = 3;
  op.name = "allreduce:bucket0";
  op.kind = OpKind::allreduce;
  op.dtype = DType::fp16;
  op.bytes = 2 * 1001;
  op.channels = 3;
  auto L = layout_collective(op, 4, 1.0);
  CHECK(L.elems == 1001);
  REQUIRE(L.pieces.size() == 3);
  CHECK(L.pieces[0].offset == 0);
  CHECK(L.pieces[0].count == 334);
  CHECK(L.pieces[1].offset == 334);
  CHECK(L.pieces[1].count == 334);
  CHECK(L.pieces[2].offset == 668);
  CHECK(L.pieces[2].count == 333);

  op.kind = OpKind::reduce_scatter;
  op.channels = 2;
  L = layout_collective(op, 4, 1.0);
  REQUIRE(L.shards.size() == 4);
  CHECK(L.shards[0].count == 251);  // 1001 = 251 + 250 * 3
  CHECK(L.shards[1].offset == 251);
  CHECK(L.shards[3].count == 250);
  REQUIRE(L.channel_shards.size() == 2);
  CHECK(L.channel_shards[0][1].offset == 251);
  CHECK(L.channel_shards[0][1].count == 125);
  CHECK(L.channel_shards[1][1].offset == 376);
  CHECK(L.channel_shards[1][1].count == 125);
  CHECK(L.channel_shards[1][0].count == 125);  // 251 = 126 + 125
  CHECK(L.channel_shards[0][0].count == 126);

  // Uneven shards from the plan (ZeRO buckets spanning some owners).
  op.shard_bytes = {0, 800, 0, 1202};
  L = layout_collective(op, 4, 1.0);
  CHECK(L.shards[0].count == 0);
  CHECK(L.shards[1].count == 400);
  CHECK(L.shards[3].offset == 400);
  CHECK(L.shards[3].count == 601);
  op.shard_bytes = {0, 800, 0, 1200};
  CHECK_THROWS_WITH(layout_collective(op, 4, 1.0), Catch::Contains("add up"));
  op.shard_bytes.clear();

  // Scaling keeps every buffer at least one element.
  op.kind = OpKind::allreduce;
  op.bytes = 2 * 10;
  CHECK(layout_collective(op, 4, 1.0 / 64).elems == 1);
  op.bytes = 2 * 1024;
  CHECK(layout_collective(op, 4, 0.25).elems == 256);

  op.kind = OpKind::reduce;
  op.root = 4;
  CHECK_THROWS_WITH(layout_collective(op, 4, 1.0), Catch::Contains("root 4"));
  op.root = 0;
  op.dtype = DType::int64;
  CHECK_THROWS_WITH(layout_collective(op, 4, 1.0), Catch::Contains("reduces int64 elements"));
  // Broadcasts and allgathers move any dtype (DDP broadcasts int64 buffers).
  op.kind = OpKind::broadcast;
  CHECK(layout_collective(op, 4, 1.0).elems == 256);  // 2048 bytes of int64
  op.dtype = DType::fp32;
  op.bytes = 6;
  CHECK_THROWS_WITH(layout_collective(op, 4, 1.0), Catch::Contains("whole number"));
}

TEST_CASE("buffer scale: traced sizes when they fit, a stated power of two when not", "[realexec][memory]") {
  const std::int64_t GiB = std::int64_t{1} << 30;
  auto s = decide_buffer_scale(std::nullopt, GiB, 4, 2 * GiB);
  CHECK(s.factor == 1.0);
  CHECK_THAT(s.reason, Catch::Contains("traced sizes"));
  // Llama-2-7B-like: 27 GB of fp32 gradients per rank, 4 ranks sharing 23 GB.
  s = decide_buffer_scale(std::nullopt, 27 * GiB, 4, static_cast<std::int64_t>(23.0 * 0.75 / 4 * GiB));
  CHECK(s.factor == 1.0 / 8);
  CHECK_THAT(s.reason, Catch::Contains("scaled by 1/8"));
  s = decide_buffer_scale(0.5, GiB, 1, GiB);
  CHECK(s.factor == 0.5);
  CHECK_THROWS_WITH(decide_buffer_scale(1.0, 4 * GiB, 1, GiB), Catch::Contains("--buffer-scale"));
  CHECK(parse_buffer_scale("auto") == std::nullopt);
  CHECK(parse_buffer_scale("0.25") == 0.25);
  CHECK_THROWS(parse_buffer_scale("0"));
  CHECK_THROWS(parse_buffer_scale("2"));
  CHECK_THROWS(parse_buffer_scale("half"));
  auto avail = mem_available_bytes();
  REQUIRE(avail);
  CHECK(*avail > 0);
}

TEST_CASE("launcher environments: torchrun, Open MPI, Slurm", "[realexec][env]") {
  auto from = [](std::map<std::string, std::string> vars) {
    return launch_env_from([vars](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    });
  };
  CHECK_FALSE(from({}));
  auto t = from({{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"},
                 {"MASTER_ADDR", "node0"}, {"MASTER_PORT", "29500"}, {"REDSIM_STORE_SECRET", "x"}});
  REQUIRE(t);
  CHECK(t->launcher == "torchrun");
  CHECK(t->rank == 3);
  CHECK(t->world_size == 8);
  CHECK(t->local_rank == 1);
  CHECK(t->local_world_size == 2);
  CHECK(t->master_addr == "node0");
  CHECK(t->store_port == 29500);
  // Under torchrun's elastic agent the agent serves MASTER_PORT itself.
  t = from({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "29500"}, {"REDSIM_STORE_SECRET", "x"}, {"TORCHELASTIC_RUN_ID", "x"}});
  CHECK(t->store_port == 29501);
  t = from({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "29500"}, {"REDSIM_STORE_SECRET", "x"}, {"REDSIM_STORE_PORT", "4000"},
            {"GLOO_SOCKET_IFNAME", "eth1"}});
  CHECK(t->store_port == 4000);
  CHECK(t->gloo_iface == "eth1");
  auto m = from({{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "6"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "3"},
                 {"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "1234"}, {"REDSIM_STORE_SECRET", "x"}});
  REQUIRE(m);
  CHECK(m->launcher == "Open MPI");
  CHECK(m->rank == 5);
  CHECK(m->local_world_size == 3);
  auto s = from({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "4"}, {"SLURM_NTASKS_PER_NODE", "2(x2)"}, {"SLURM_LOCALID", "1"},
                 {"MASTER_ADDR", "n1"}, {"MASTER_PORT", "777"}, {"REDSIM_STORE_SECRET", "x"}});
  REQUIRE(s);
  CHECK(s->launcher == "Slurm");
  CHECK(s->local_world_size == 2);
  CHECK_THROWS_WITH(from({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1"}}), Catch::Contains("MASTER_ADDR"));
  CHECK_THROWS_WITH(from({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}}),
                    Catch::Contains("not below"));
  CHECK_THROWS_WITH(from({{"SLURM_PROCID", "0"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}}),
                    Catch::Contains("SLURM_NTASKS is not set"));
  CHECK_THROWS_WITH(from({{"RANK", "x"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}}),
                    Catch::Contains("RANK=\"x\""));
}

TEST_CASE("rank reports round-trip and align on a shared clock", "[realexec][measure]") {
  Plan plan;
  plan.world_size = 2;
  plan.streams = {"compute", "comm0"};
  PlanOp fwd;
  fwd.id = 0;
  fwd.kind = OpKind::forward;
  fwd.name = "fwd";
  PlanOp ar;
  ar.id = 1;
  ar.kind = OpKind::allreduce;
  ar.stream = 1;
  ar.deps = {0};
  ar.bytes = 8;
  ar.name = "ar";
  plan.ops = {fwd, ar};

  auto step = [](double origin, double fwd_end, double ar_issue, double ar_end) {
    StepRecord s;
    s.origin_s = origin;
    s.ops.resize(2);
    s.ops[0] = {origin, origin, fwd_end, 0, 0};
    s.ops[1] = {ar_issue, ar_issue, ar_end, 8, 8};
    return s;
  };
  RankReport r0{0, "hostA", {step(100.0, 100.010, 100.010, 100.030), step(200.0, 200.010, 200.011, 200.050)}, 4, {}, 1.0, 0};
  // Rank 1's holdings travel with its report: 1, 2, 3, 4 bytes by kind, 5 bytes of peak RSS.
  RankReport r1{1, "hostA", {step(100.001, 100.012, 100.012, 100.031), step(200.002, 200.010, 200.020, 200.040)}, 4,
                {1, 2, 3, 4}, 0.5, 5};
  auto back = deserialize_report(serialize_report(r1), 2);
  CHECK(back.rank == 1);
  CHECK(back.host == "hostA");
  REQUIRE(back.steps.size() == 2);
  CHECK(back.steps[1].ops[1].end_s == 200.040);
  CHECK(back.buffers_checked == 4);
  CHECK(back.held.params_bytes == 1);
  CHECK(back.held.grads_bytes == 2);
  CHECK(back.held.optimizer_bytes == 3);
  CHECK(back.held.buffer_bytes == 4);
  CHECK(back.peak_rss_bytes == 5);
  CHECK(back.state_scale == 0.5);
  CHECK_THROWS(deserialize_report(serialize_report(r1), 3));

  auto m = assemble(plan, {r0, back});
  CHECK(m.shared_clock);
  REQUIRE(m.step_times_s.size() == 2);
  CHECK(m.step_times_s[0] == Approx(0.031));
  CHECK(m.step_times_s[1] == Approx(0.050));
  CHECK(m.median_step == 0);  // the lower median of two
  CHECK(m.buffers_checked == 8);
  // Times from the step's earliest origin; the allreduce starts when the last rank issued it.
  CHECK(m.timeline.at(1, 0).start_s == Approx(0.001));
  CHECK(m.timeline.at(0, 1).ready_s == Approx(0.010));
  CHECK(m.timeline.at(0, 1).start_s == Approx(0.012));
  CHECK(m.timeline.at(1, 1).start_s == Approx(0.012));
  CHECK(m.timeline.source == "measured");

  // Different hosts: each rank's times from its own origin.
  r1.host = "hostB";
  auto m2 = assemble(plan, {r0, r1});
  CHECK_FALSE(m2.shared_clock);
  CHECK(m2.timeline.at(1, 0).start_s == Approx(0.0));
  CHECK(m2.timeline.at(1, 1).start_s == Approx(0.011));

  // A plan covering 4 training steps (LocalSGD, H = 4) is timed whole, reported per step.
  plan.steps = 4;
  auto m4 = assemble(plan, {r0, back});
  REQUIRE(m4.step_times_s.size() == 2);
  CHECK(m4.step_times_s[0] == Approx(0.031 / 4));
  CHECK(m4.step_times_s[1] == Approx(0.050 / 4));
  CHECK(m4.timeline.at(0, 1).end_s == Approx(0.030));  // the timeline keeps the plan's own times
}

TEST_CASE("TCP store: set, get, wait, timeouts and large values", "[realexec][store]") {
  TcpStoreServer server(listen_tcp("127.0.0.1", 0), "s3cret");
  TcpStore a("127.0.0.1", server.port(), std::chrono::seconds(5), std::chrono::seconds(5), "s3cret");
  TcpStore b("127.0.0.1", server.port(), std::chrono::milliseconds(200), std::chrono::seconds(5), "s3cret");
  a.set("k", {'v', '1'});
  CHECK(b.get("k") == std::vector<char>{'v', '1'});
  // get waits for a key set later by another client.
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    a.set("late", {'x'});
  });
  CHECK(b.get("late", std::chrono::seconds(5)) == std::vector<char>{'x'});
  late.join();
  CHECK_THROWS_WITH(b.get("never"), Catch::Contains("timed out"));
  CHECK_THROWS_WITH(b.wait({"k", "never"}), Catch::Contains("never"));
  std::vector<char> big(5 << 20);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 31);
  a.set("big", big);
  CHECK(b.get("big") == big);
  CHECK(server.peek("k") == std::vector<char>{'v', '1'});
  CHECK_FALSE(server.peek("nope"));
  CHECK_THROWS_WITH(TcpStore("127.0.0.1", 1, std::chrono::seconds(1), std::chrono::milliseconds(100), "s3cret"),
                    Catch::Contains("cannot connect"));
}

TEST_CASE("traffic models", "[realexec][traffic]") {
  CHECK(ring_allreduce_traffic(400, 4, 0).bytes_sent == 600);
  CHECK(ring_allreduce_traffic(400, 1, 0).bytes_sent == 0);
  // A chain over 5 ranks moves the buffer over 4 hops: 4 senders, 4 receivers.
  std::int64_t sent = 0, recv = 0;
  for (bool toward_root : {true, false})
    for (int r = 0; r < 5; ++r) {
      sent += ring_chain_traffic(1000, 5, r, 2, toward_root).bytes_sent;
      recv += ring_chain_traffic(1000, 5, r, 2, toward_root).bytes_received;
    }
  CHECK(sent == 2 * 4 * 1000);
  CHECK(sent == recv);  // bytes are conserved
}

TEST_CASE("calibrate splits an allreduce's time beside compute into a rate and a fixed delay", "[realexec][interference]") {
  // Two sizes on the line beside = g x alone + d: g = 1.25 and d = 8 ms, as two points give them.
  redsim::realexec::InterferenceMeasurement m;
  m.small.bytes = 65536;
  m.small.alone_s = 2e-3, m.small.beside_s = 1.25 * 2e-3 + 8e-3, m.small.beside = 20;
  m.large.bytes = 4 << 20;
  m.large.alone_s = 0.1, m.large.beside_s = 1.25 * 0.1 + 8e-3, m.large.beside = 4;
  CHECK(m.collective_slowdown() == Approx(1.25).epsilon(1e-12));
  CHECK(m.collective_latency_s() == Approx(8e-3).epsilon(1e-9));
  // Noise that tilts the line below 1 is no speed-up: g = 1 and the small size's excess is d.
  m.large.beside_s = 0.1 + 5e-3;
  CHECK(m.collective_slowdown() == 1.0);
  CHECK(m.collective_latency_s() == Approx(1.25 * 2e-3 + 8e-3 - 2e-3).epsilon(1e-9));
  // The small size not measured: the large one's ratio, no delay.
  m.small.beside = 0;
  CHECK(m.collective_slowdown() == Approx(1.05).epsilon(1e-12));
  CHECK(m.collective_latency_s() == 0.0);
}

TEST_CASE("calibrate's rank speed is the median pair's, so one slow moment of the host does not set it", "[realexec][interference]") {
  using redsim::median_index;
  // Ratios lone / together of five pairs: 0.431 is a slow moment while every rank ran.
  const std::vector<double> lone{0.4, 0.409, 0.49, 0.44, 0.48};
  const std::vector<double> together{0.8, 0.949, 1.0, 0.8, 1.0};
  std::vector<double> speed;
  for (std::size_t i = 0; i < lone.size(); ++i) speed.push_back(lone[i] / together[i]);
  // Sorted: 0.431 (1), 0.48 (4), 0.49 (2), 0.5 (0), 0.55 (3): the median is pair 2.
  CHECK(median_index(speed) == 2);
  // An even count takes the lower middle: 0.5, 0.431, 0.49, 0.55 -> 0.49 (pair 2).
  CHECK(median_index({0.5, 0.409 / 0.949, 0.49, 0.55}) == 2);
  // Equal ratios stay in their order (the middle of three is pair 1); one pair is its own median;
  // none gives 0.
  CHECK(median_index({0.5, 0.5, 0.5}) == 1);
  CHECK(median_index({0.4 / 0.9}) == 0);
  CHECK(median_index({}) == 0);
}

TEST_CASE("calibrate times five pairs for the rank speed, fifteen when the first five spread wide", "[realexec][interference]") {
  using redsim::realexec::more_speed_pairs;
  // Fewer than five: always another.
  CHECK(more_speed_pairs({}));
  CHECK(more_speed_pairs({0.49, 0.49, 0.49, 0.49}));
  // Five within 10% of their median stop: 0.472-0.497 spreads 0.025, 5.1% of 0.49.
  CHECK_FALSE(more_speed_pairs({0.472, 0.49, 0.497, 0.48, 0.495}));
  // The spread of a busy moment (stop 57's calibration: 0.499-0.602 about a median of 0.521):
  // 0.103 is 19.8% of the median, so ten more.
  const std::vector<double> busy{0.499, 0.51, 0.521, 0.55, 0.602};
  CHECK(more_speed_pairs(busy));
  // Once over five, the pairs go on to fifteen whatever they read, and stop there.
  std::vector<double> v = busy;
  for (int i = 0; i < 9; ++i) {
    v.push_back(0.49);
    CHECK(more_speed_pairs(v));
  }
  v.push_back(0.49);
  CHECK(v.size() == 15);
  CHECK_FALSE(more_speed_pairs(v));
  // The median of the fifteen is a quiet pair's: ten of them read 0.49.
  CHECK(v[redsim::median_index(v)] == 0.49);
}
