// Reads nccl-tests output (all_reduce_perf, reduce_scatter_perf, all_gather_perf, broadcast_perf,
// reduce_perf): the header (threads, GPUs per thread), the "#  Rank" lines (ranks, hosts,
// devices), the column header (which tells old layouts without redop/root from new ones) and the
// rows, in-place and out-of-place, with the #wrong column. The one owner of this format.
#pragma once
#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/nccl_list.h"
#include "core/plan.h"

namespace redsim {

struct NcclTestsRow {
  int line = 0;
  std::int64_t size_bytes = 0;  // nccl-tests' size column (allgather, reduce-scatter: the whole buffer)
  std::int64_t count = 0;
  std::string type;
  std::string redop;  // "" in layouts without the column
  int root = -1;
  double time_us = 0;  // out-of-place
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  std::optional<std::int64_t> wrong;  // nullopt: "N/A" (run with -c 0)
  double inplace_time_us = 0;         // 0 when the log has no in-place columns
};

struct NcclTestsRun {
  std::string file;
  int first_line = 0;
  OpKind op = OpKind::allreduce;
  std::string op_from;  // how the op was told: "test name line", "file name", "columns"
  int ranks = 0;
  int nodes = 0;  // distinct hosts of the rank lines
  int devices_per_node = 0;
  std::string device;      // the first rank's device name
  int gpus_per_thread = 1;  // nccl-tests' -g
  int iters = 20;           // nccl-tests' -n (the header's "iters: N"; nccl-tests' default when absent)
  // The NCCL release the run used, as major * 10000 + minor * 100 + patch (ClusterSpec's
  // encoding), from "# nccl-tests version ... nccl-library=CODE" or NCCL's own "NCCL version
  // 2.18.5+cuda12.2" line; 0 when the log prints neither.
  int nccl_version = 0;
  // NCCL_ALGO / NCCL_PROTO as the run's NCCL printed them ("NCCL INFO NCCL_ALGO set by environment
  // to Ring", under NCCL_DEBUG=INFO), read as NCCL reads them; nullopt when the log does not say.
  std::optional<NcclList> nccl_algo, nccl_proto;
  // NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS as it printed them ("NCCL_MAX_NCHANNELS set by
  // environment to 16."), unclamped; nullopt when the log does not say.
  std::optional<long long> nccl_min_channels, nccl_max_channels;
  std::vector<NcclTestsRow> rows;
};

// A run of one of nccl-tests' other tests (alltoall_perf, sendrecv_perf, gather_perf,
// scatter_perf, hypercube_perf), which redsim does not model, left out of a log.
struct NcclTestsSkip {
  std::string file;
  int line = 0;  // its "# nThread" header
  std::string test;
};

// Throws InputError("FILE: line N: expected ...") for anything it cannot read: a truncated row or
// log, a row before any header, no rank lines, ranks spread unevenly over hosts, an unknown type,
// an op it cannot tell. With `skipped`, a run that names itself one of nccl-tests' other tests
// (cluster checks often log several tests in one file) is left out and listed there instead, and
// only a log with nothing else is an error; without it, such a run is an error.
std::vector<NcclTestsRun> parse_nccl_tests_log(std::istream& in, const std::string& file,
                                               std::vector<NcclTestsSkip>* skipped = nullptr);
std::vector<NcclTestsRun> read_nccl_tests_log(const std::string& file, std::vector<NcclTestsSkip>* skipped = nullptr);
// "FILE: line N: alltoall_perf left out (...)", for a user's console.
std::string skipped_run_note(const NcclTestsSkip& k);

// NCCL_VERSION_CODE as nccl-tests prints it ("nccl-library=21805"; before 2.9 the code was
// major * 1000 + minor * 100 + patch, e.g. 2708) in ClusterSpec's encoding; 0 if not one.
int nccl_version_of_code(std::int64_t code);

// Bytes per element of nccl-tests' type names (float, half, bfloat16, double, int8, ...); 0 if unknown.
int nccl_tests_type_bytes(const std::string& type);
// The redsim type simulating nccl-tests' type `type`: the same element size and the same NVLS
// support (nvls_reduces): uint32 runs as int32, uint64 as int64, int8 and the 8-bit floats as
// uint8 (NVLS reduces no 8-bit type). nullopt if unknown.
std::optional<DType> nccl_tests_dtype(const std::string& type);
// The reduction simulating nccl-tests' -o `op` (its test_opnames: sum, prod, max, min, avg,
// mulsum); mulsum, a pre-multiplied sum, runs as avg, which NCCL computes the same way on
// floating point. nullopt for anything else ("none" included: the row reduces nothing).
std::optional<ReduceOp> nccl_tests_redop(const std::string& op);
inline constexpr const char* kNcclTestsRedopChoices = "sum|prod|max|min|avg|mulsum";
// The names nccl-tests' -d takes, "|"-separated.
inline constexpr const char* kNcclTestsTypeChoices = "int8|uint8|int32|uint32|int64|uint64|half|float|double|bfloat16|f8e4m3|f8e5m2";

}  // namespace redsim
