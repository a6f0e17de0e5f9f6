// nccl-tests logs: the reader on hand-written logs of each layout (the real logs under
// tests/data/nccl_tests are read by e2e_nccl_tests_calibrate.sh), its errors, and the fit
// recovering link parameters from logs the simulator wrote with known ones.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "collectives/cluster_subset.h"
#include "core/cluster_json.h"
#include "core/error.h"
#include "sim/collective_sweep.h"
#include "validate/nccl_tests_fit.h"
#include "validate/nccl_tests_log.h"

using namespace redsim;

namespace {

std::string rank_lines(int nodes, int per_node) {
  std::string s = "#\n# Using devices\n";
  for (int r = 0; r < nodes * per_node; ++r)
    s += "#  Rank " + std::to_string(r) + " Group  0 Pid  100 on node" + std::to_string(r / per_node) + " device  " +
         std::to_string(r % per_node) + " [0x07] NVIDIA A100-SXM4-80GB\n";
  return s;
}

const char* kColumns =
    "#                                                              out-of-place                       in-place\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n";

std::vector<NcclTestsRun> parse(const std::string& text, const std::string& name = "log.txt") {
  std::istringstream in(text);
  return parse_nccl_tests_log(in, name);
}

std::string input_error(const std::string& text, const std::string& name = "log.txt") {
  try {
    parse(text, name);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// A log of `op` as nccl-tests prints it, with the times the simulator gives on `cluster`.
std::string simulated_log(const ClusterSpec& cluster, OpKind op, const char* test, std::int64_t min_b, std::int64_t max_b,
                          int gpus_per_thread = 1) {
  SweepOptions o;
  o.ops = {op};
  o.min_bytes = min_b;
  o.max_bytes = max_b;
  o.step_factor = 2;
  o.gpus_per_process = gpus_per_thread;
  std::string s = std::string("# Collective test starting: ") + test + "\n# nThread 1 nGpus " + std::to_string(gpus_per_thread) +
                  " minBytes 8 maxBytes 1\n" +
                  rank_lines(cluster.nodes, cluster.devices_per_node) + kColumns;
  for (const auto& r : collective_sweep(cluster, o)) {
    char line[200];
    std::snprintf(line, sizeof line, "%12lld %12lld float sum %d %.3f 0 0 0 %.3f 0 0 0\n", static_cast<long long>(r.size_bytes),
                  static_cast<long long>(r.count), r.root, r.time_us, r.time_us);
    s += line;
  }
  return s + "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 1.0\n";
}

std::vector<PredictedRow> predict(const ClusterSpec& layout, const NcclTestsRun& run) {
  SweepOptions o;
  o.ops = {run.op};
  o.gpus_per_process = run.gpus_per_thread;
  for (const auto& r : run.rows) o.sizes.push_back(r.size_bytes);
  std::vector<PredictedRow> rows;
  for (const auto& r : collective_sweep(layout, o)) rows.push_back({r.time_us, r.device_time_us, r.channels});
  return rows;
}

}  // namespace

TEST_CASE("nccl-tests: a multi-node allreduce log with its rank lines", "[nccl_tests]") {
  const std::string log = std::string("# nThread 1 nGpus 1 minBytes 1048576 maxBytes 2097152 step: 2(factor)\n") +
                          rank_lines(2, 4) + kColumns +
                          "     1048576        262144     float     sum      -1   339.61    3.09    3.09       0   335.85    3.12    3.12       0\n"
                          "node0:1:1 [0] NCCL INFO a line NCCL prints in the middle\n"
                          "     2097152        524288     float     sum      -1   355.53    5.90    5.90     N/A   361.77    5.80    5.80     N/A\n"
                          "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 4.5\n";
  const auto runs = parse(log, "all_reduce_perf_2n.log");
  REQUIRE(runs.size() == 1);
  const auto& r = runs[0];
  CHECK(r.op == OpKind::allreduce);
  CHECK(r.op_from == "file name");
  CHECK(r.ranks == 8);
  CHECK(r.nodes == 2);
  CHECK(r.devices_per_node == 4);
  CHECK(r.device == "NVIDIA A100-SXM4-80GB");
  REQUIRE(r.rows.size() == 2);
  CHECK(r.rows[0].size_bytes == 1048576);
  CHECK(r.rows[0].time_us == 339.61);
  CHECK(r.rows[0].inplace_time_us == 335.85);
  CHECK(r.rows[0].wrong == 0);
  CHECK(!r.rows[1].wrong.has_value());  // N/A: run with -c 0
}

TEST_CASE("nccl-tests: the timed iterations from the header, 20 when it does not say", "[nccl_tests]") {
  const std::string rows = rank_lines(1, 8) + kColumns +
                           "     1048576        262144     float     sum      -1   339.61    3.09    3.09       0   335.85    3.12    3.12       0\n"
                           "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 4.5\n";
  const std::string header = "# nThread 1 nGpus 8 minBytes 1048576 maxBytes 1048576 step: 2(factor) ";
  CHECK(parse(header + "warmup iters: 5 iters: 40 agg iters: 1 validation: 1 graph: 0\n" + rows, "all_reduce_perf.log")[0].iters == 40);
  CHECK(parse(header + "\n" + rows, "all_reduce_perf.log")[0].iters == 20);
  CHECK(input_error(header + "warmup iters: 5 iters: 0 agg iters: 1\n" + rows).find("iters: followed by an iteration count") !=
        std::string::npos);
}

TEST_CASE("nccl-tests: the op from the test name, or from the columns", "[nccl_tests]") {
  const std::string body = rank_lines(1, 4) + kColumns;
  const std::string end = "# Avg bus bandwidth    : 1\n";
  // reduce_scatter: count is per rank (4 ranks x 65536 floats = 1 MiB).
  auto rs = parse("# nThread 1 nGpus 1\n" + body + " 1048576 65536 float sum -1 20.0 0 0 0 20.0 0 0 0\n" + end);
  CHECK(rs[0].op == OpKind::reduce_scatter);
  CHECK(rs[0].op_from == "columns");
  auto bc = parse("# nThread 1 nGpus 1\n" + body + " 1048576 262144 float none 0 20.0 0 0 0 20.0 0 0 0\n" + end);
  CHECK(bc[0].op == OpKind::broadcast);
  auto rd = parse("# nThread 1 nGpus 1\n" + body + " 1048576 262144 float sum 0 20.0 0 0 0 20.0 0 0 0\n" + end);
  CHECK(rd[0].op == OpKind::reduce);
  // Two tests in one log, each named by the line before its header.
  auto two = parse("# Collective test starting: all_gather_perf\n# nThread 1 nGpus 2\n" + body +
                   " 1048576 65536 float none -1 20.0 0 0 0 20.0 0 0 0\n" + end +
                   "# Collective test starting: all_reduce_perf\n# nThread 1 nGpus 1\n" + body +
                   " 1048576 262144 float sum -1 20.0 0 0 0 20.0 0 0 0\n" + end);
  REQUIRE(two.size() == 2);
  CHECK(two[0].op == OpKind::allgather);
  CHECK(two[0].gpus_per_thread == 2);
  CHECK(two[1].op == OpKind::allreduce);
  CHECK(two[1].op_from == "test name line");
}

TEST_CASE("nccl-tests: truncated and foreign logs name the file and line", "[nccl_tests]") {
  const std::string head = "# nThread 1 nGpus 1\n" + rank_lines(1, 2) + kColumns;
  // Cut in the middle of the row on line 9.
  CHECK(input_error(head + "     1048576        262144     float     sum      -1   339.61    3.0") ==
        "log.txt: line 9: a row of 13 columns, as the header at line 7 says; got 7 (is the log cut short?)");
  CHECK(input_error(head + " 1048576 262144 float sum -1 20.0 0 0 0 20.0 0 0 0\n").rfind("log.txt: line 9: ", 0) == 0);
  CHECK(input_error("hello\n").rfind("log.txt: line 1: ", 0) == 0);
  CHECK(input_error("# Collective test starting: alltoall_perf\n" + head +
                    " 1048576 262144 float none -1 20.0 0 0 0 20.0 0 0 0\n# Avg bus bandwidth : 1\n")
            .rfind("log.txt: line 2: ", 0) == 0);
  CHECK(input_error("# nThread 1 nGpus 1\n" + std::string(kColumns) +
                    " 1048576 262144 float sum -1 20.0 0 0 0 20.0 0 0 0\n# Avg bus bandwidth : 1\n", "all_reduce.log")
            .find("Rank") != std::string::npos);
}

TEST_CASE("nccl-tests: a host's ranks come in whole processes of nGpus", "[nccl_tests]") {
  const std::string row = " 1048576 262144 float sum -1 20.0 0 0 0 20.0 0 0 0\n# Avg bus bandwidth : 1\n";
  // 2 hosts of 4 ranks: processes of 1, 2 or 4 GPUs; not of 3 (nor 8, more than a host has).
  for (int g : {1, 2, 4})
    CHECK(parse("# nThread 1 nGpus " + std::to_string(g) + "\n" + rank_lines(2, 4) + kColumns + row, "all_reduce.log")
              .front()
              .gpus_per_thread == g);
  for (int g : {3, 8})
    CHECK(input_error("# nThread 1 nGpus " + std::to_string(g) + "\n" + rank_lines(2, 4) + kColumns + row, "all_reduce.log") ==
          "all_reduce.log: line 1: each host's ranks in whole processes of nGpus " + std::to_string(g) + " GPUs (4 ranks a host)");
}

TEST_CASE("nccl-tests fit: recovers the link bandwidth and latency the logs were made with", "[nccl_tests][fit]") {
  const ClusterSpec preset = load_cluster(REDSIM_SOURCE_DIR "/configs/dgx-a100.json");
  ClusterSpec truth = preset;
  truth.intra.link_bandwidth_GBps = 150;  // a slower machine than the preset says
  truth.intra.latency_us = 3.0;
  const auto runs = parse(simulated_log(truth, OpKind::allreduce, "all_reduce_perf", 8, 1LL << 30));
  const auto fit = fit_nccl_tests(preset, "dgx-a100.json", runs, predict, [](const std::string&) {});
  REQUIRE(fit.params.size() == 2);
  CHECK(fit.params[0].name == "$.intra_node.link_bandwidth_GBps");
  CHECK(fit.params[0].before == 240);
  // NCCL's topology search picks a channel's speed from a discrete list (search.cc's speed
  // arrays), so bandwidths within one step give identical times: the fit lands on the truth's
  // step, and every row then matches what the logs were made with.
  CHECK(fit.params[0].after == Approx(150).epsilon(0.1));
  CHECK(fit.params[1].after == Approx(3.0).margin(0.3));
  for (const auto& r : fit.rows) CHECK(r.after_us == Approx(r.measured_us).epsilon(0.02));
}

TEST_CASE("nccl-tests fit: a -g 8 log gives the host's launch cost and its part per channel", "[nccl_tests][fit]") {
  // One thread launching 8 GPUs: an iteration lasts at least 8 x (launch + per channel x
  // (channels - 1)), and NCCL gives a ring LL collective a channel per 32 KiB here, so from 64 KiB
  // to 1 MiB the host's time grows with the channels (2 to 24) and below it stays at 8 launches.
  const ClusterSpec preset = load_cluster(REDSIM_SOURCE_DIR "/configs/dgx-a100.json");
  REQUIRE(preset.collective_launch_us == 4);
  ClusterSpec truth = preset;
  truth.collective_launch_us = 4.5;
  truth.collective_launch_per_channel_us = 0.2;
  const auto runs = parse(simulated_log(truth, OpKind::allgather, "all_gather_perf", 1024, 256LL << 20, 8), "all_gather.log");
  REQUIRE(runs[0].gpus_per_thread == 8);
  const auto fit = fit_nccl_tests(preset, "dgx-a100.json", runs, predict, [](const std::string&) {});
  const FittedParam* fixed = nullptr;
  const FittedParam* per_channel = nullptr;
  for (const auto& p : fit.params) {
    if (p.name == "$.collective_launch_us") fixed = &p;
    if (p.name == "$.collective_launch_per_channel_us") per_channel = &p;
  }
  REQUIRE(fixed != nullptr);
  REQUIRE(per_channel != nullptr);
  CHECK(fixed->before == 4);
  CHECK(fixed->after == Approx(4.5).epsilon(0.02));
  CHECK(per_channel->before == 0);
  CHECK(per_channel->after == Approx(0.2).epsilon(0.05));
  CHECK(fit.cluster.launch_us(OpKind::allgather, 24) == Approx(4.5 + 0.2 * 23).epsilon(0.02));
  for (const auto& r : fit.rows) CHECK(r.after_us == Approx(r.measured_us).epsilon(0.02));
}

TEST_CASE("nccl-tests fit: a multi-node log fits the NICs", "[nccl_tests][fit]") {
  const ClusterSpec preset = load_cluster(REDSIM_SOURCE_DIR "/configs/dgx-a100-x2.json");
  ClusterSpec truth = cluster_layout(preset, 2, 1);
  truth.inter.nic_bandwidth_gbps = 100;
  truth.inter.latency_us = 5;
  const auto runs = parse(simulated_log(truth, OpKind::allreduce, "all_reduce_perf", 1024, 256LL << 20));
  REQUIRE(runs[0].nodes == 2);
  const auto fit = fit_nccl_tests(preset, "dgx-a100-x2.json", runs, predict, [](const std::string&) {});
  REQUIRE(fit.params.size() == 2);
  CHECK(fit.params[0].name == "$.inter_node.nic_bandwidth_gbps");
  // NCCL's inter-node speed steps are coarser still; the rows below are what must match.
  CHECK(fit.params[0].after == Approx(100).epsilon(0.15));
  CHECK(fit.params[1].after == Approx(5).margin(0.5));
  for (const auto& r : fit.rows) CHECK(r.after_us == Approx(r.measured_us).epsilon(0.02));
}

TEST_CASE("nccl-tests: real logs from public repositories (tests/data/nccl_tests/SOURCES.md)", "[nccl_tests]") {
  struct Expect {
    const char* file;
    OpKind op;
    int ranks, nodes;
    int rows;  // -b..-e by -f 2 from the header, less sizes under one element per rank; -1: not checked
  };
  // superbench: -b 1 -e 8G = 34 sizes; float, so sizes under 4 B (8 ranks x 4 B for the per-rank
  // counts of reduce-scatter and allgather) carry nothing and are dropped: 32, or 29.
  const Expect expect[] = {
      {"superbench-a100_all_reduce_8r.log", OpKind::allreduce, 8, 1, 32},
      {"superbench-a100_reduce_scatter_8r.log", OpKind::reduce_scatter, 8, 1, 29},
      {"superbench-a100_all_gather_8r.log", OpKind::allgather, 8, 1, 29},
      {"superbench-a100_broadcast_8r.log", OpKind::broadcast, 8, 1, 32},
      {"superbench-a100_reduce_8r.log", OpKind::reduce, 8, 1, 32},
      {"gcp-a3mega-h100_all_reduce_16r.log", OpKind::allreduce, 16, 2, 31},  // 8 B .. 8 GiB
      {"oci-a100_all_reduce_16r.log", OpKind::allreduce, 16, 2, 25},         // 64 B .. 1 GiB
      {"oci-h100_all_reduce_16r.log", OpKind::allreduce, 16, 2, 5},          // 1 .. 16 GiB
      {"autodl-2080ti_reduce_2r.log", OpKind::reduce, 2, 1, 28},             // 8 B .. 1 GiB
      {"autodl-2080ti_all_gather_2r.log", OpKind::allgather, 2, 1, -1},
      {"azure-k80_all_reduce_4r.log", OpKind::allreduce, 4, 1, -1},  // the source's rows stop before -e
  };
  for (const auto& e : expect) {
    INFO(e.file);
    const auto runs = read_nccl_tests_log(std::string(REDSIM_SOURCE_DIR "/tests/data/nccl_tests/") + e.file);
    REQUIRE(runs.size() == 1);
    const auto& r = runs[0];
    CHECK(r.op == e.op);
    CHECK(r.ranks == e.ranks);
    CHECK(r.nodes == e.nodes);
    if (e.rows >= 0) CHECK(static_cast<int>(r.rows.size()) == e.rows);
    REQUIRE(!r.rows.empty());
    for (std::size_t i = 1; i < r.rows.size(); ++i) CHECK(r.rows[i].size_bytes == 2 * r.rows[i - 1].size_bytes);
    for (const auto& row : r.rows) {
      // nccl-tests' own arithmetic: algbw = size / time (GB/s = bytes / us / 1e3), to its 2 decimals.
      // (time is printed rounded, so allow its last digit too).
      CHECK(row.algbw_GBps == Approx(static_cast<double>(row.size_bytes) / row.time_us / 1e3).epsilon(0.002).margin(0.006));
    }
  }
  try {
    read_nccl_tests_log(REDSIM_SOURCE_DIR "/tests/data/nccl_tests/truncated_all_reduce.log");
    FAIL("a truncated log was read");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("truncated_all_reduce.log: line 50: ") != std::string::npos);
  }
}

TEST_CASE("nccl-tests: a log's runs of tests redsim does not model are left out, when asked", "[nccl_tests]") {
  // Cluster checks log several tests in one file. With a list to put them in, an alltoall_perf
  // run is left out (its header line noted) and the all_reduce_perf run after it read; without,
  // it is an error, as is a log with nothing else, or a test nccl-tests does not have.
  const std::string head = "# nThread 1 nGpus 1\n" + rank_lines(1, 2) + kColumns;
  const std::string a2a = "# Collective test starting: alltoall_perf\n" + head +
                          " 1048576 131072 float none -1 20.0 52.43 26.21 0 20.0 52.43 26.21 N/A\n# Avg bus bandwidth : 26.21\n";
  const std::string ar = "# Collective test starting: all_reduce_perf\n" + head +
                         " 1048576 262144 float sum -1 20.0 52.43 52.43 0 20.0 52.43 52.43 0\n# Avg bus bandwidth : 52.43\n";
  std::vector<NcclTestsSkip> skipped;
  std::istringstream in(a2a + ar);
  const auto runs = parse_nccl_tests_log(in, "mixed.log", &skipped);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].op == OpKind::allreduce);
  CHECK(runs[0].first_line == 13);  // after the first run (11 lines) and its own test line
  REQUIRE(skipped.size() == 1);
  CHECK(skipped[0].test == "alltoall_perf");
  CHECK(skipped[0].line == 2);
  CHECK(skipped_run_note(skipped[0]).rfind("mixed.log: line 2: alltoall_perf left out", 0) == 0);
  CHECK(input_error(a2a + ar).rfind("log.txt: line 2: ", 0) == 0);  // not asked: an error
  std::vector<NcclTestsSkip> only;
  std::istringstream alone(a2a);
  CHECK_THROWS_WITH(parse_nccl_tests_log(alone, "a2a.log", &only),
                    Catch::Contains("a2a.log: line 2: ") && Catch::Contains("the log has only alltoall_perf"));
  std::istringstream foreign("# Collective test starting: foo_perf\n" + head +
                             " 1048576 262144 float sum -1 20.0 52.43 52.43 0 20.0 52.43 52.43 0\n# Avg bus bandwidth : 1\n");
  CHECK_THROWS_WITH(parse_nccl_tests_log(foreign, "foo.log", &only), Catch::Contains("got foo_perf"));
  // A real log: the alltoall run of an H100 cluster check, then a real all_reduce run.
  const std::string dir = REDSIM_SOURCE_DIR "/tests/data/nccl_tests/";
  std::ifstream x(dir + "xxrjun-h100_alltoall_8r.log"), y(dir + "superbench-a100_all_reduce_8r.log");
  std::stringstream both;
  both << x.rdbuf() << y.rdbuf();
  std::vector<NcclTestsSkip> real;
  const auto real_runs = parse_nccl_tests_log(both, "cluster_check.log", &real);
  REQUIRE(real_runs.size() == 1);
  CHECK(real_runs[0].ranks == 8);
  REQUIRE(real.size() == 1);
  CHECK(real[0].line == 2);
}

namespace {
// A run of one 1 MiB allreduce row on 2 ranks: its header and rank lines, and its columns, row and end.
std::string one_mib_header() {
  return std::string("# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1048576 step: 2(factor)\n") + rank_lines(1, 2);
}
std::string one_mib_row() {
  return std::string(kColumns) +
         "     1048576        262144     float     sum      -1   339.61    3.09    3.09       0   335.85    3.12    3.12       0\n"
         "# Avg bus bandwidth    : 3.09\n";
}
}  // namespace

TEST_CASE("nccl-tests: the NCCL release a log prints, in either of its two lines", "[nccl_tests]") {
  const std::string run = one_mib_header(), row = one_mib_row();
  CHECK(parse(run + row).front().nccl_version == 0);
  // nccl-tests' own line (before the header) carries NCCL_VERSION_CODE: 2.18.5 is 21805.
  const std::string tests_line = "# nccl-tests version 2.13.9 nccl-headers=21805 nccl-library=21805\n";
  CHECK(parse(tests_line + run + row).front().nccl_version == 21805);
  // NCCL's own line inside the run says what the library is (the headers may differ).
  CHECK(parse(tests_line + run + "NCCL version 2.30.3+cuda13.0\n" + row).front().nccl_version == 23003);
  CHECK(parse(run + "node0:1:1 [0] NCCL INFO NCCL version 2.20.5+cuda12.4\n" + row).front().nccl_version == 22005);
  // Before 2.9 the code was major x 1000 + minor x 100 + patch (nccl.h.in).
  CHECK(parse("# nccl-tests version 2.10.0 nccl-headers=2708 nccl-library=2708\n" + run + row).front().nccl_version == 20708);
  CHECK(nccl_version_of_code(22807) == 22807);
  CHECK(nccl_version_of_code(0) == 0);
  CHECK(nccl_version_of_code(30000) == 0);
  // A second run in the same log keeps the release printed before it.
  const auto two = parse(tests_line + run + row + run + row);
  REQUIRE(two.size() == 2);
  CHECK(two.back().nccl_version == 21805);
}

TEST_CASE("nccl-tests: the NCCL_ALGO and NCCL_PROTO a run's NCCL printed, as NCCL reads them", "[nccl_tests]") {
  // NCCL prints "NCCL_ALGO set by environment to %s" under NCCL_DEBUG=INFO (src/graph/tuning.cc;
  // the ENV subsystem is in NCCL's default mask), at its communicator's init, inside the run.
  const std::string run = one_mib_header(), row = one_mib_row();
  const std::string algo = "node0:1:1 [0] NCCL INFO NCCL_ALGO set by environment to ^nvls,Tree\n";
  const std::string proto = "node0:1:1 [0] NCCL INFO NCCL_PROTO set by environment to Simple\n";
  const auto runs = parse(run + algo + proto + row);
  REQUIRE(runs.front().nccl_algo.has_value());
  CHECK(runs.front().nccl_algo->enabled[4] ==
        (nccl_all_names(NcclListOf::algorithms) & ~(1u << static_cast<int>(Algorithm::nvls)) &
         ~(1u << static_cast<int>(Algorithm::tree))));
  REQUIRE(runs.front().nccl_proto.has_value());
  CHECK(nccl_list_value(*runs.front().nccl_proto) == "Simple");
  CHECK_FALSE(parse(run + row).front().nccl_algo.has_value());
  // Printed before a run's header, the values go to that run; each run takes only its own.
  const auto two = parse(algo + run + row + run + row);
  REQUIRE(two.size() == 2);
  CHECK(two.front().nccl_algo.has_value());
  CHECK_FALSE(two.back().nccl_algo.has_value());
  // The line after the run's header and rank lines.
  const auto line = std::to_string(std::count(run.begin(), run.end(), '\n') + 1);
  CHECK_THROWS_WITH(parse(run + "NCCL INFO NCCL_ALGO set by environment to Rings\n" + row),
                    Catch::Contains("line " + line + ": a value of NCCL_ALGO as NCCL reads it: unknown name \"Rings\""));
}

TEST_CASE("nccl-tests: a row's reduction is one of nccl-tests' operations, mulsum as avg", "[nccl_tests]") {
  // nccl-tests' test_opnames: sum, prod, max, min, avg, mulsum; "none" where nothing is reduced.
  const std::string head = "# Collective test starting: all_reduce_perf\n# nThread 1 nGpus 1\n" + rank_lines(1, 2) + kColumns;
  auto row = [](const char* op) { return std::string(" 1048576 262144 float ") + op + " -1 20.0 0 0 0 20.0 0 0 0\n"; };
  const std::string tail = "# Avg bus bandwidth : 1\n";
  for (const char* op : {"sum", "prod", "max", "min", "avg", "mulsum"}) {
    INFO(op);
    const auto runs = parse(head + row(op) + tail);
    REQUIRE(runs.size() == 1);
    CHECK(runs[0].rows.at(0).redop == op);
  }
  CHECK(nccl_tests_redop("mulsum") == ReduceOp::avg);
  CHECK(nccl_tests_redop("max") == ReduceOp::max);
  CHECK_FALSE(nccl_tests_redop("none").has_value());
  CHECK(input_error(head + row("premul") + tail) ==
        "log.txt: line 10: an nccl-tests reduction (sum, prod, max, min, avg, mulsum, or none), got \"premul\"");
}

TEST_CASE("nccl-tests: the NCCL_MIN_NCHANNELS and NCCL_MAX_NCHANNELS a run's NCCL printed", "[nccl_tests]") {
  // NCCL_PARAM prints "%s set by environment to %lld." (src/misc/param.cc), the value unclamped:
  // connect.cc clamps it later, so the reader keeps what was printed, a minus sign included.
  const std::string run = one_mib_header(), row = one_mib_row();
  const std::string min = "node0:1:1 [0] NCCL INFO NCCL_MIN_NCHANNELS set by environment to 16.\n";
  const std::string max = "node0:1:1 [0] NCCL INFO NCCL_MAX_NCHANNELS set by environment to -3.\n";
  const auto runs = parse(min + run + max + row);
  REQUIRE(runs.size() == 1);
  CHECK(runs.front().nccl_min_channels == 16);
  CHECK(runs.front().nccl_max_channels == -3);
  const auto plain = parse(run + row);
  CHECK_FALSE(plain.front().nccl_min_channels.has_value());
  CHECK_FALSE(plain.front().nccl_max_channels.has_value());
  // Each run takes only the bounds printed for it.
  const auto two = parse(min + run + row + run + row);
  REQUIRE(two.size() == 2);
  CHECK(two.front().nccl_min_channels == 16);
  CHECK_FALSE(two.back().nccl_min_channels.has_value());
  const auto line = std::to_string(std::count(run.begin(), run.end(), '\n') + 1);
  CHECK_THROWS_WITH(parse(run + "NCCL INFO NCCL_MAX_NCHANNELS set by environment to sixteen.\n" + row),
                    Catch::Contains("line " + line + ": a whole number of channels within +-1000000 after NCCL_MAX_NCHANNELS"));
}
