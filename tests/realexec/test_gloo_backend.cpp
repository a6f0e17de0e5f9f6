// The Gloo backend, collective by collective: every kind x reduce op x wire dtype on 2, 3 and 4
// ranks (threads of this process over TCP loopback), against a reference computed here from
// every rank's inputs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "core/plan.h"
#include "realexec/gloo_backend.h"
#include "realexec/half.h"
#include "realexec/interference_bench.h"
#include "rank_threads.h"

using namespace redsim;
using namespace redsim::realexec;

namespace {

// Rank r's input at element i for case c: small integers, so every reduction is exact.
float input(OpKind kind, ReduceOp op, int c, int r, std::int64_t i) {
  if (kind == OpKind::broadcast || kind == OpKind::allgather) return static_cast<float>(r * 10 + (i % 7));
  switch (op) {
    case ReduceOp::prod: {
      static const float v[4] = {-1, 1, 2, 1};
      return v[(i * 3 + r * 5 + c) % 4];
    }
    case ReduceOp::max:
    case ReduceOp::min:
      return static_cast<float>((i * 11 + r * 5 + c) % 17) - 8.0f;
    default:
      return static_cast<float>((i * 13 + r * 7 + c * 3) % 9) - 4.0f;
  }
}

std::uint32_t enc(float f, DType dt) {
  if (dt == DType::fp16) return float_to_fp16(f);
  if (dt == DType::bf16) return float_to_bf16(f);
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

std::uint32_t load(const std::vector<char>& buf, std::int64_t i, DType dt) {
  if (dt == DType::fp32) {
    std::uint32_t u;
    std::memcpy(&u, buf.data() + i * 4, 4);
    return u;
  }
  std::uint16_t h;
  std::memcpy(&h, buf.data() + i * 2, 2);
  return h;
}

void store(std::vector<char>& buf, std::int64_t i, DType dt, float v) {
  const std::uint32_t e = enc(v, dt);
  if (dt == DType::fp32)
    std::memcpy(buf.data() + i * 4, &e, 4);
  else {
    const auto h = static_cast<std::uint16_t>(e);
    std::memcpy(buf.data() + i * 2, &h, 2);
  }
}

float reference(OpKind kind, ReduceOp op, int c, int n, std::int64_t i) {
  float acc = input(kind, op, c, 0, i);
  for (int r = 1; r < n; ++r) {
    const float x = input(kind, op, c, r, i);
    switch (op) {
      case ReduceOp::prod:
        acc *= x;
        break;
      case ReduceOp::max:
        acc = std::max(acc, x);
        break;
      case ReduceOp::min:
        acc = std::min(acc, x);
        break;
      default:
        acc += x;
    }
  }
  if (op == ReduceOp::avg) acc /= static_cast<float>(n);
  return acc;
}

struct Case {
  OpKind kind;
  ReduceOp op;
  DType dtype;
  bool uneven_shards;
};

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (DType dt : {DType::fp32, DType::fp16, DType::bf16}) {
    for (OpKind k : {OpKind::allreduce, OpKind::reduce, OpKind::reduce_scatter})
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min, ReduceOp::prod})
        for (bool uneven : {false, true})
          if (!uneven || k == OpKind::reduce_scatter) cases.push_back({k, op, dt, uneven});
    cases.push_back({OpKind::broadcast, ReduceOp::sum, dt, false});
    cases.push_back({OpKind::allgather, ReduceOp::sum, dt, false});
    cases.push_back({OpKind::allgather, ReduceOp::sum, dt, true});
  }
  return cases;
}

std::vector<Segment> shards_for(int n, std::int64_t count, bool uneven) {
  std::vector<Segment> s;
  if (!uneven) {
    std::int64_t off = 0;
    for (int r = 0; r < n; ++r) {
      const std::int64_t c = count / n + (r < count % n ? 1 : 0);
      s.push_back({off, c});
      off += c;
    }
    return s;
  }
  // Starts at element 5 (nobody owns 0..4), rank 1 owns nothing, sizes differ.
  std::int64_t off = 5;
  for (int r = 0; r < n; ++r) {
    const std::int64_t c = r == 1 ? 0 : 100 + 37 * r;
    s.push_back({off, c});
    off += c;
  }
  return s;
}

std::string describe(const Case& k, int n) {
  return std::string(op_kind_name(k.kind)) + " " + std::string(reduce_op_name(k.op)) + " " +
         std::string(dtype_name(k.dtype)) + (k.uneven_shards ? " uneven" : "") + " on " + std::to_string(n) + " ranks";
}

// What element i of this rank's buffer must hold after case k (nothing: not checked).
std::optional<float> expected(const Case& k, int c, int rank, int n, int root, const std::vector<Segment>& shards,
                              std::int64_t i) {
  switch (k.kind) {
    case OpKind::allreduce:
      return reference(k.kind, k.op, c, n, i);
    case OpKind::reduce:
      if (rank == root) return reference(k.kind, k.op, c, n, i);
      return std::nullopt;
    case OpKind::broadcast:
      return input(k.kind, k.op, c, root, i);
    case OpKind::reduce_scatter: {
      const auto& own = shards[static_cast<std::size_t>(rank)];
      if (i >= own.offset && i < own.offset + own.count) return reference(k.kind, k.op, c, n, i);
      return std::nullopt;
    }
    case OpKind::allgather:
      for (int o = 0; o < n; ++o) {
        const auto& s = shards[static_cast<std::size_t>(o)];
        if (i >= s.offset && i < s.offset + s.count) return input(k.kind, k.op, c, o, i);
      }
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

Traffic run_case(Communicator& comm, const Case& k, std::vector<char>& buf, std::int64_t total,
                 const std::vector<Segment>& shards, int root) {
  switch (k.kind) {
    case OpKind::allreduce:
      return comm.allreduce(buf.data(), total, k.dtype, k.op);
    case OpKind::reduce:
      return comm.reduce(buf.data(), total, k.dtype, k.op, root);
    case OpKind::broadcast:
      return comm.broadcast(buf.data(), total, k.dtype, root);
    case OpKind::reduce_scatter:
      return comm.reduce_scatter(buf.data(), shards, k.dtype, k.op);
    case OpKind::allgather:
      return comm.allgather(buf.data(), shards, k.dtype);
    default:
      return {};
  }
}

std::vector<std::string> run_cases(int rank, int n, gloo::rendezvous::Store& st, std::int64_t count, int* cases_run) {
  std::vector<std::string> problems;
  auto backend = make_gloo_backend(st, rank, n, {"127.0.0.1", "", std::chrono::seconds(30)});
  auto comm = backend->make_communicator("test");
  const auto cases = all_cases();
  for (std::size_t ci = 0; ci < cases.size(); ++ci) {
    const Case& k = cases[ci];
    const int c = static_cast<int>(ci);
    const int root = n - 1;  // not rank 0, to catch root mix-ups
    const std::int64_t es = dtype_size_bytes(k.dtype);
    std::vector<Segment> shards;
    std::int64_t total = count;
    if (k.kind == OpKind::reduce_scatter || k.kind == OpKind::allgather) {
      shards = shards_for(n, count, k.uneven_shards);
      total = shards.back().offset + shards.back().count;
    }
    std::vector<char> buf(static_cast<std::size_t>(total * es));
    for (std::int64_t i = 0; i < total; ++i) {
      float v = input(k.kind, k.op, c, rank, i);
      if (k.kind == OpKind::broadcast && rank != root) v = -99;  // must be overwritten
      if (k.kind == OpKind::allgather) {
        const auto& own = shards[static_cast<std::size_t>(rank)];
        if (i < own.offset || i >= own.offset + own.count) v = -99;
      }
      store(buf, i, k.dtype, v);
    }
    const Traffic t = run_case(*comm, k, buf, total, shards, root);
    ++*cases_run;
    // Every rank sends in an allreduce; in a reduce's chain all but the root (its tail) do.
    if ((k.kind == OpKind::allreduce || (k.kind == OpKind::reduce && rank != root)) && t.bytes_sent <= 0)
      problems.push_back(describe(k, n) + ": rank " + std::to_string(rank) + " reports no bytes sent");
    for (std::int64_t i = 0; i < total; ++i) {
      const auto want = expected(k, c, rank, n, root, shards, i);
      if (!want) continue;
      if (load(buf, i, k.dtype) != enc(*want, k.dtype)) {
        problems.push_back(describe(k, n) + ": rank " + std::to_string(rank) + " element " + std::to_string(i) +
                           " differs from the reference " + std::to_string(*want));
        break;
      }
    }
  }
  return problems;
}

}  // namespace

TEST_CASE("Gloo backend: every collective, reduce op and dtype matches the reference", "[realexec][gloo]") {
  for (int n : {2, 3, 4}) {
    INFO(n << " ranks");
    std::vector<int> cases_run(static_cast<std::size_t>(n), 0);
    const std::int64_t count = 1000 * n + 7;  // not a multiple of the rank count
    auto problems = testing::run_ranks(n, [&](int rank, gloo::rendezvous::Store& st) {
      return run_cases(rank, n, st, count, &cases_run[static_cast<std::size_t>(rank)]);
    });
    for (const auto& p : problems) FAIL_CHECK(p);
    CHECK(problems.empty());
    for (int c : cases_run) CHECK(c == static_cast<int>(all_cases().size()));
  }
}

TEST_CASE("Gloo backend: a buffer of many segments, and one rank", "[realexec][gloo]") {
  // 600k fp32 elements is 2.4 MB: several of Gloo's 1 MiB segments per rank.
  const std::int64_t count = 600001;
  auto problems = testing::run_ranks(3, [&](int rank, gloo::rendezvous::Store& st) {
    std::vector<std::string> out;
    auto backend = make_gloo_backend(st, rank, 3, {"127.0.0.1", "", std::chrono::seconds(30)});
    auto comm = backend->make_communicator("big");
    std::vector<float> buf(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) buf[static_cast<std::size_t>(i)] = static_cast<float>((i + rank) % 5);
    const Traffic t = comm->allreduce(buf.data(), count, DType::fp32, ReduceOp::sum);
    for (std::int64_t i = 0; i < count; ++i) {
      const float want = static_cast<float>(i % 5 + (i + 1) % 5 + (i + 2) % 5);
      if (buf[static_cast<std::size_t>(i)] != want) {
        out.push_back("element " + std::to_string(i) + " is " + std::to_string(buf[static_cast<std::size_t>(i)]));
        break;
      }
    }
    // Ring allreduce: every rank sends 2 (N-1)/N of the buffer.
    const double ratio = static_cast<double>(t.bytes_sent) / static_cast<double>(count * 4);
    if (ratio < 1.3 || ratio > 1.4) out.push_back("bytes sent ratio " + std::to_string(ratio) + " is not ~4/3");
    return out;
  });
  for (const auto& p : problems) FAIL_CHECK(p);
  CHECK(problems.empty());

  // Reduce and broadcast are pipelined chains of 512 KiB chunks: 600001 fp32 elements are 5
  // chunks of unequal size; every root position along the chain is tried on 4 ranks.
  auto chains = testing::run_ranks(4, [&](int rank, gloo::rendezvous::Store& st) {
    std::vector<std::string> out;
    auto backend = make_gloo_backend(st, rank, 4, {"127.0.0.1", "", std::chrono::seconds(30)});
    auto comm = backend->make_communicator("chain");
    std::vector<float> buf(static_cast<std::size_t>(count));
    for (int root = 0; root < 4; ++root) {
      for (std::int64_t i = 0; i < count; ++i) buf[static_cast<std::size_t>(i)] = static_cast<float>((i + rank) % 5);
      const Traffic tr = comm->reduce(buf.data(), count, DType::fp32, ReduceOp::sum, root);
      if (rank == root)
        for (std::int64_t i = 0; i < count; ++i)
          if (buf[static_cast<std::size_t>(i)] != static_cast<float>(i % 5 + (i + 1) % 5 + (i + 2) % 5 + (i + 3) % 5)) {
            out.push_back("reduce to " + std::to_string(root) + ": element " + std::to_string(i));
            break;
          }
      // The chain's tail (the root) sends nothing; every other rank sends the buffer once.
      if (tr.bytes_sent != (rank == root ? 0 : count * 4)) out.push_back("reduce bytes sent " + std::to_string(tr.bytes_sent));
      for (std::int64_t i = 0; i < count; ++i)
        buf[static_cast<std::size_t>(i)] = rank == root ? static_cast<float>(i % 11) : -1.0f;
      const Traffic tb = comm->broadcast(buf.data(), count, DType::fp32, root);
      for (std::int64_t i = 0; i < count; ++i)
        if (buf[static_cast<std::size_t>(i)] != static_cast<float>(i % 11)) {
          out.push_back("broadcast from " + std::to_string(root) + ": element " + std::to_string(i));
          break;
        }
      if (tb.bytes_received != (rank == root ? 0 : count * 4)) out.push_back("broadcast bytes received");
    }
    return out;
  });
  for (const auto& p : chains) FAIL_CHECK(p);
  CHECK(chains.empty());

  // A world of one: every collective leaves the buffer as it is (avg divides by 1).
  auto single = testing::run_ranks(1, [&](int rank, gloo::rendezvous::Store& st) {
    std::vector<std::string> out;
    auto backend = make_gloo_backend(st, rank, 1, {"127.0.0.1", "", std::chrono::seconds(30)});
    auto comm = backend->make_communicator("one");
    std::vector<float> buf{1, 2, 3};
    comm->allreduce(buf.data(), 3, DType::fp32, ReduceOp::avg);
    comm->reduce_scatter(buf.data(), {{0, 3}}, DType::fp32, ReduceOp::sum);
    comm->allgather(buf.data(), {{0, 3}}, DType::fp32);
    backend->barrier();
    if (buf != std::vector<float>{1, 2, 3}) out.push_back("single-rank collectives changed the buffer");
    return out;
  });
  CHECK(single.empty());
}

TEST_CASE("Gloo backend: buffers smaller than the world (scaled-down plans)", "[realexec][gloo]") {
  // --buffer-scale can leave a collective with fewer elements than ranks.
  auto problems = testing::run_ranks(4, [&](int rank, gloo::rendezvous::Store& st) {
    std::vector<std::string> out;
    auto backend = make_gloo_backend(st, rank, 4, {"127.0.0.1", "", std::chrono::seconds(30)});
    auto comm = backend->make_communicator("tiny");
    for (std::int64_t count : {1, 2, 3, 5}) {
      std::vector<float> buf(static_cast<std::size_t>(count));
      for (std::int64_t i = 0; i < count; ++i) buf[static_cast<std::size_t>(i)] = static_cast<float>(rank + i);
      comm->allreduce(buf.data(), count, DType::fp32, ReduceOp::sum);
      for (std::int64_t i = 0; i < count; ++i)
        if (buf[static_cast<std::size_t>(i)] != static_cast<float>(6 + 4 * i)) out.push_back("allreduce of " + std::to_string(count));
      for (std::int64_t i = 0; i < count; ++i) buf[static_cast<std::size_t>(i)] = static_cast<float>(rank + i);
      comm->reduce(buf.data(), count, DType::fp32, ReduceOp::max, 2);
      if (rank == 2)
        for (std::int64_t i = 0; i < count; ++i)
          if (buf[static_cast<std::size_t>(i)] != static_cast<float>(3 + i)) out.push_back("reduce of " + std::to_string(count));
      std::vector<Segment> shards;
      for (int r = 0; r < 4; ++r) shards.push_back({count * r / 4, count * (r + 1) / 4 - count * r / 4});
      for (std::int64_t i = 0; i < count; ++i) buf[static_cast<std::size_t>(i)] = static_cast<float>(rank + i);
      comm->reduce_scatter(buf.data(), shards, DType::fp32, ReduceOp::sum);
      const auto& own = shards[static_cast<std::size_t>(rank)];
      for (std::int64_t i = own.offset; i < own.offset + own.count; ++i)
        if (buf[static_cast<std::size_t>(i)] != static_cast<float>(6 + 4 * i)) out.push_back("reduce_scatter of " + std::to_string(count));
      for (std::int64_t i = 0; i < count; ++i) buf[static_cast<std::size_t>(i)] = -1;
      for (std::int64_t i = own.offset; i < own.offset + own.count; ++i) buf[static_cast<std::size_t>(i)] = static_cast<float>(10 * rank);
      comm->allgather(buf.data(), shards, DType::fp32);
      for (int r = 0; r < 4; ++r)
        for (std::int64_t i = shards[static_cast<std::size_t>(r)].offset; i < shards[static_cast<std::size_t>(r)].offset + shards[static_cast<std::size_t>(r)].count; ++i)
          if (buf[static_cast<std::size_t>(i)] != static_cast<float>(10 * r)) out.push_back("allgather of " + std::to_string(count));
    }
    return out;
  });
  for (const auto& p : problems) FAIL_CHECK(p);
  CHECK(problems.empty());
}

TEST_CASE("calibrate's compute times: the mean and the slowest over ranks, the same on every rank",
          "[realexec][interference]") {
  // Ranks 0, 1, 2 report 1, 3 and 5 s: the mean is 3 s and the slowest 5 s on every rank (exact
  // in fp32).
  std::vector<double> mean(3, 0.0), slowest(3, 0.0);
  auto problems = testing::run_ranks(3, [&](int rank, gloo::rendezvous::Store& st) {
    auto backend = make_gloo_backend(st, rank, 3, {"127.0.0.1", "", std::chrono::seconds(30)});
    auto comm = backend->make_communicator("mean");
    const auto r = static_cast<std::size_t>(rank);
    mean[r] = mean_over_ranks(*comm, *backend, 2.0 * rank + 1.0);
    slowest[r] = reduce_over_ranks(*comm, *backend, 2.0 * rank + 1.0, ReduceOp::max);
    return std::vector<std::string>{};
  });
  for (const auto& p : problems) FAIL_CHECK(p);
  for (double m : mean) CHECK(m == 3.0);
  for (double s : slowest) CHECK(s == 5.0);
}
