// redsim collective: a simulated nccl-tests. One collective (or all five) over a size sweep on a
// cluster file, printed with nccl-tests' columns and bus-bandwidth factors, plus the algorithm,
// protocol and channel count the collective model chose at each size.
#include <cctype>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/collective_compare.h"
#include "cli/commands.h"
#include "cli/nccl_tests_sweep.h"
#include "collectives/cluster_subset.h"
#include "collectives/nccl_releases.h"
#include "core/atomic_file.h"
#include "core/cluster_json.h"
#include "core/error.h"
#include "core/nccl_list.h"
#include "core/plan_json.h"
#include "sim/collective_sweep.h"
#include "validate/nccl_tests_log.h"

namespace redsim::cli {
namespace {

struct CollectiveOptions {
  std::string cluster_file;
  std::string op = "allreduce";
  std::string ops;
  std::string min_bytes = "32M", max_bytes = "32M", step_bytes = "1M";
  double step_factor = 1;
  std::string datatype = "float";
  std::string redop = "sum";
  int root = 0;
  int gpus = 1;
  int iters = 20;
  int ranks = 0;
  std::string algorithm = "auto", protocol = "auto", channels = "auto";
  std::string fidelity = "auto";
  std::string json_file;
  std::string nccl_version;  // empty: the cluster file's
  std::vector<std::string> compare_logs;
  std::string svg_file;
};

// nccl-tests' sizes: a number with an optional K, M or G suffix (powers of 1024).
std::int64_t parse_size(const std::string& text, const char* flag) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = text.substr(used);
  for (auto& ch : unit) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  if (!unit.empty() && unit.back() == 'B') unit.pop_back();
  double mult = unit.empty() ? 1 : unit == "K" ? 1024.0 : unit == "M" ? 1048576.0 : unit == "G" ? 1073741824.0 : -1;
  const double bytes = v * mult;
  if (used == 0 || mult < 0 || !(bytes >= 1) || bytes > 1099511627776.0)
    throw InputError("", "", std::string(flag) + ": expected a size in bytes with an optional K, M or G suffix (1 B .. 1 TiB), got \"" +
                                 text + "\"");
  return static_cast<std::int64_t>(bytes);
}

OpKind parse_op(const std::string& name) {
  if (const auto k = nccl_tests_kind_named(name)) return *k;
  throw InputError("", "", "--op: expected allreduce|reduce_scatter|allgather|broadcast|reduce, got \"" + name + "\"");
}

std::vector<OpKind> parse_ops(const CollectiveOptions& o) {
  if (o.ops.empty()) return {parse_op(o.op)};
  if (o.ops == "all") return {kNcclTestsKinds.begin(), kNcclTestsKinds.end()};
  std::vector<OpKind> out;
  std::size_t start = 0;
  while (start <= o.ops.size()) {
    const auto comma = o.ops.find(',', start);
    out.push_back(parse_op(o.ops.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// -d as nccl-tests names it; redsim's own fp32, fp16 and bf16 are taken too.
std::string nccl_type_name(const std::string& d) { return d == "fp32" ? "float" : d == "fp16" ? "half" : d == "bf16" ? "bfloat16" : d; }

SweepOptions sweep_options(const CollectiveOptions& o) {
  SweepOptions s;
  s.ops = parse_ops(o);
  s.min_bytes = parse_size(o.min_bytes, "-b");
  s.max_bytes = parse_size(o.max_bytes, "-e");
  s.step_bytes = parse_size(o.step_bytes, "-i");
  s.step_factor = o.step_factor;
  const auto dtype = nccl_tests_dtype(nccl_type_name(o.datatype));
  if (!dtype)
    throw InputError("", "", "-d: expected " + std::string(kNcclTestsTypeChoices) + ", got \"" + o.datatype + "\"");
  s.dtype = *dtype;
  const auto r = nccl_tests_redop(o.redop);
  if (!r) throw InputError("", "", "-o: expected " + std::string(kNcclTestsRedopChoices) + ", got \"" + o.redop + "\"");
  s.redop = *r;
  s.root = o.root;
  s.gpus_per_process = o.gpus;
  s.iters = o.iters;
  std::string why;
  if (!parse_algorithm_setting(o.algorithm, &s.request.algorithm, &s.request.algorithm_list, &why))
    throw InputError("", "", "--algorithm: " + why);
  if (!parse_protocol_setting(o.protocol, &s.request.protocol, &s.request.protocol_list, &why))
    throw InputError("", "", "--protocol: " + why);
  if (o.channels != "auto") {
    std::size_t used = 0;
    int c = 0;
    try {
      c = std::stoi(o.channels, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != o.channels.size() || c < 1 || c > 64)
      throw InputError("", "", "--channels: expected auto or 1 to 64, got \"" + o.channels + "\"");
    s.request.channels = c;
  }
  s.fidelity = parse_fidelity(o.fidelity);
  return s;
}

// `type` and `redop`: -d and -o as given, printed as nccl-tests prints them.
void print_table(const std::vector<SweepRow>& rows, OpKind kind, const std::string& type, const std::string& redop,
                 double& sum_busbw, int& count) {
  std::cout << "#\n# " << op_kind_name(kind) << " (simulated)\n";
  std::cout << "#       size         count      type   redop    root     time   algbw   busbw #wrong   algorithm protocol channels\n";
  std::cout << "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)\n";
  for (const auto& r : rows) {
    if (r.kind != kind) continue;
    char line[256];
    const bool reducing = kind != OpKind::allgather && kind != OpKind::broadcast;
    std::snprintf(line, sizeof line, "%12lld  %12lld  %8s  %6s  %6d  %7.*f  %6.2f  %6.2f  %5s   %9s %8s %8d\n",
                  static_cast<long long>(r.size_bytes), static_cast<long long>(r.count), type.c_str(),
                  reducing ? redop.c_str() : "none", r.root, r.time_us < 100 ? 2 : r.time_us < 10000 ? 1 : 0,
                  r.time_us, r.algbw_GBps, r.busbw_GBps, "N/A", std::string(algorithm_name(r.algorithm)).c_str(),
                  r.protocol ? std::string(protocol_name(*r.protocol)).c_str() : "-", r.channels);
    std::cout << line;
    sum_busbw += r.busbw_GBps;
    ++count;
  }
}

nlohmann::json rows_json(const std::vector<SweepRow>& rows, const std::string& type, const std::string& redop) {
  auto arr = nlohmann::json::array();
  for (const auto& r : rows)
    arr.push_back({{"op", op_kind_name(r.kind)},
                   {"size_bytes", r.size_bytes},
                   {"count", r.count},
                   {"type", type},
                   {"redop", redop},
                   {"root", r.root},
                   {"time_us", r.time_us},
                   {"algbw_GBps", r.algbw_GBps},
                   {"busbw_GBps", r.busbw_GBps},
                   {"algorithm", algorithm_name(r.algorithm)},
                   {"protocol", r.protocol ? nlohmann::json(protocol_name(*r.protocol)) : nlohmann::json(nullptr)},
                   {"channels", r.channels}});
  return arr;
}

void run_collective(const CollectiveOptions& o) {
  if (!o.compare_logs.empty()) {
    const auto s = sweep_options(o);  // the defaults of the sweep's own options, and the pinned choice
    compare_collective_logs({o.compare_logs, o.cluster_file, o.json_file, o.svg_file, s.request, s.fidelity});
    return;
  }
  if (!o.svg_file.empty()) throw InputError("", "", "--svg: expected --compare LOG as well (the chart sets a log's measurements beside the prediction)");
  check_outputs_distinct({{"--cluster", o.cluster_file}}, {{"--json", o.json_file}});
  check_output_targets({{"--json", o.json_file}});
  auto full = load_cluster(o.cluster_file);
  if (!o.nccl_version.empty()) {
    const auto v = parse_nccl_version(o.nccl_version);
    if (!v) throw InputError("", "", std::string("--nccl-version: expected ") + kNcclVersionExpected + ", got \"" + o.nccl_version + "\"");
    if (full.library != CollectiveLibrary::nccl)
      throw InputError("", "", "--nccl-version: expected a cluster with \"collective_library\": \"nccl\"; " + o.cluster_file + " has ideal collectives");
    full.nccl_version = *v;
  }
  const auto s = sweep_options(o);
  const auto cluster = cluster_subset(full, o.ranks > 0 ? o.ranks : full.world_size());
  Fidelity used = Fidelity::exact;
  const auto rows = collective_sweep(cluster, s, &used);
  std::cout << "# redsim collective: simulated nccl-tests on " << cluster.name << ", " << cluster.world_size() << " ranks ("
            << cluster.nodes << " x " << cluster.devices_per_node << "), "
            << (cluster.library == CollectiveLibrary::nccl
                    ? "NCCL " + nccl_version_name(cluster.nccl_version) + "'s collective model (tuning of " +
                          nccl::release_of(cluster.nccl_version).tag + ", the release's layout, other mechanics 2.18.5's)"
                    : std::string("ideal collectives"))
            << ", "
            << fidelity_name(used) << " fidelity, -g " << s.gpus_per_process << ", -n " << s.iters << "\n";
  // What was pinned, so a saved table says which NCCL_ALGO / NCCL_PROTO it stands for.
  if (s.request.algorithm || s.request.algorithm_list || s.request.protocol || s.request.protocol_list || s.request.channels)
    std::cout << "# requested: algorithm " << requested_algorithm(s.request) << ", protocol "
              << requested_protocol(s.request) << ", channels "
              << (s.request.channels ? std::to_string(s.request.channels) : "auto") << "\n";
  if (const auto why = ignored_list_note(cluster, s.request); !why.empty()) std::cout << "# note: " << why << "\n";
  double sum = 0;
  int count = 0;
  for (OpKind kind : s.ops) print_table(rows, kind, nccl_type_name(o.datatype), o.redop, sum, count);
  std::cout << "# Avg bus bandwidth    : " << (count > 0 ? sum / count : 0.0) << "\n#\n";
  if (!o.json_file.empty()) {
    nlohmann::json j = {{"format", "redsim-collective"},
                        {"version", 1},
                        {"cluster", {{"file", o.cluster_file}, {"name", cluster.name}, {"ranks", cluster.world_size()}}},
                        {"nccl_version", cluster.library == CollectiveLibrary::nccl ? nlohmann::json(nccl_version_name(cluster.nccl_version))
                                                                                     : nlohmann::json(nullptr)},
                        {"fidelity", fidelity_name(used)},
                        {"gpus_per_process", s.gpus_per_process},
                        {"iters", s.iters},
                        {"requested", requested_to_json(s.request)},
                        {"rows", rows_json(rows, nccl_type_name(o.datatype), o.redop)}};
    write_file_atomically(o.json_file, j.dump(1) + "\n");
    std::cout << "json: " << o.json_file << "\n";
  }
}

}  // namespace

void add_collective_command(CLI::App& app) {
  auto o = std::make_shared<CollectiveOptions>();
  auto* cmd = app.add_subcommand("collective", "a simulated nccl-tests: one collective over a size sweep on a cluster");
  cmd->add_option("--cluster", o->cluster_file, "cluster JSON (configs/README.md)")->required();
  cmd->add_option("--op", o->op, "allreduce|reduce_scatter|allgather|broadcast|reduce")->capture_default_str();
  cmd->add_option("--ops", o->ops, "several collectives, comma-separated, or all (the five)");
  cmd->add_option("-b,--minbytes", o->min_bytes, "smallest size, bytes (K, M, G suffixes: powers of 1024), as nccl-tests")->capture_default_str();
  cmd->add_option("-e,--maxbytes", o->max_bytes, "largest size, bytes (K, M, G suffixes)")->capture_default_str();
  cmd->add_option("-f,--stepfactor", o->step_factor, "multiply the size by this between rows (1: add -i)")->capture_default_str();
  cmd->add_option("-i,--stepbytes", o->step_bytes, "add this many bytes between rows when -f is 1")->capture_default_str();
  cmd->add_option("-d,--datatype", o->datatype, kNcclTestsTypeChoices)->capture_default_str();
  cmd->add_option("-o,--redop", o->redop, std::string("reduction: ") + kNcclTestsRedopChoices)->capture_default_str();
  cmd->add_option("-r,--root", o->root, "root rank of broadcast and reduce")->capture_default_str();
  cmd->add_option("-g,--ngpus", o->gpus,
                  "devices one process drives (nccl-tests' -g; it divides the ranks and is at most a node's devices): "
                  "an iteration lasts at least this many launches (collective_launch_us each), as one thread launches "
                  "them in turn")
      ->capture_default_str();
  cmd->add_option("-n,--iters", o->iters,
                  "iterations timed together (nccl-tests' -n): queued back to back, a broadcast's or reduce's "
                  "iterations overlap by the chain's fill")
      ->capture_default_str();
  cmd->add_option("--ranks", o->ranks, "simulate the first N ranks only: up to one node's devices, or whole nodes");
  cmd->add_option("--algorithm", o->algorithm, "auto (NCCL's choice per size)|ring|tree|nvls|nvlstree|collnet|hierarchical|pat, or an NCCL_ALGO "
                  "value: a list (Ring,Tree), an exclusion (^NVLS), per collective from NCCL 2.24 "
                  "(\"allreduce:Tree;allgather:Ring\")")
      ->capture_default_str();
  cmd->add_option("--protocol", o->protocol, "auto|ll|ll128|simple, or an NCCL_PROTO value: a list (LL,Simple), an exclusion (^LL128), per collective from 2.24")->capture_default_str();
  cmd->add_option("--channels", o->channels, "auto or 1-64 (NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS)")->capture_default_str();
  cmd->add_option("--fidelity", o->fidelity, "exact|scalable|auto")->capture_default_str();
  cmd->add_option("--json", o->json_file, "also write the rows as JSON here");
  cmd->add_option("--nccl-version", o->nccl_version,
                  "the NCCL release whose tuning model and work layout to follow, e.g. 2.20.5 (nccl clusters; default: the cluster file's nccl_version, else 2.18.5)");
  auto* compare = cmd->add_option("--compare", o->compare_logs,
                                  "nccl-tests logs (all_reduce_perf, ... output) to set beside the simulation: each run simulated on "
                                  "the part of the cluster it ran on, with its sizes, op, type, -g, -n and NCCL release; prints "
                                  "measured and predicted time and busbw and the error per row");
  cmd->add_option("--svg", o->svg_file, "with --compare: also draw measured and predicted busbw against size here (SVG)");
  for (const char* name : {"--op", "--ops", "-b", "-e", "-f", "-i", "-d", "-o", "-r", "-g", "-n", "--ranks", "--nccl-version"})
    compare->excludes(cmd->get_option(name));
  cmd->callback([o] { run_collective(*o); });
}

}  // namespace redsim::cli
