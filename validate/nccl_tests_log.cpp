#include "validate/nccl_tests_log.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "core/cluster_json.h"
#include "core/error.h"

namespace redsim {
namespace {

std::vector<std::string> tokens_of(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string t; in >> t;) out.push_back(t);
  return out;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

std::string ltrim(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

std::optional<double> number(const std::string& t) {
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size()) return std::nullopt;
  return v;
}

std::optional<std::int64_t> whole(const std::string& t) {
  if (t.empty() || t.size() > 18 || !std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return std::stoll(t);
}

// Where each value sits in a row, from the column header line ("size count type redop root time
// algbw busbw #wrong time ..."); old layouts lack redop and root, or call #wrong "error".
struct Columns {
  int size = -1, count = -1, type = -1, redop = -1, root = -1;
  int time = -1, algbw = -1, busbw = -1, wrong = -1, inplace_time = -1;
  bool wrong_is_max_error = false;  // old layouts print the largest deviation, not a count
  std::size_t width = 0;
  int line = 0;
};

std::optional<Columns> columns_of(const std::vector<std::string>& t, int line) {
  Columns c;
  c.line = line;
  c.width = t.size();
  for (int i = 0; i < static_cast<int>(t.size()); ++i) {
    const std::string& n = t[static_cast<std::size_t>(i)];
    if (n == "size") c.size = i;
    else if (n == "count") c.count = i;
    else if (n == "type") c.type = i;
    else if (n == "redop") c.redop = i;
    else if (n == "root") c.root = i;
    else if (n == "time") (c.time < 0 ? c.time : c.inplace_time) = i;
    else if (n == "algbw" && c.algbw < 0) c.algbw = i;
    else if (n == "busbw" && c.busbw < 0) c.busbw = i;
    else if ((n == "#wrong" || n == "error" || n == "wrong") && c.wrong < 0) {
      c.wrong = i;
      c.wrong_is_max_error = n == "error";
    }
  }
  if (c.size < 0 || c.count < 0 || c.type < 0 || c.time < 0 || c.algbw < 0 || c.busbw < 0) return std::nullopt;
  return c;
}

struct Reader {
  std::string file;
  std::vector<NcclTestsRun> runs;
  std::vector<NcclTestsSkip>* skipped = nullptr;
  std::optional<NcclTestsRun> run;
  std::optional<Columns> cols;
  std::vector<std::string> hosts;  // host of each rank line, in order
  std::string test_name;           // from "# Collective test starting: X", before the header
  std::string run_test_name;       // the current run's
  bool complete = false;
  int last_line = 0;
  int version = 0;  // the last NCCL version the log printed
  // NCCL_ALGO / NCCL_PROTO printed before any run's header, for the next run (NCCL prints them
  // at its communicator's init, inside the run, which takes them directly).
  std::optional<NcclList> pending_algo, pending_proto;
  std::optional<long long> pending_min_channels, pending_max_channels;

  [[noreturn]] void fail(int line, const std::string& what) const {
    throw InputError(file, "line " + std::to_string(line), what);
  }
  void finish();
  void start(const std::vector<std::string>& t, int line);
  void rank_line(const std::vector<std::string>& t, int line);
  void row(const std::vector<std::string>& t, int line);
  void line(const std::string& raw, int line);
  bool env_line(const std::string& s, int line);
  bool channels_line(const std::string& s, int line);
};

void Reader::start(const std::vector<std::string>& t, int line) {
  if (run) finish();
  run_test_name = test_name;
  test_name.clear();
  run = NcclTestsRun{};
  run->file = file;
  run->first_line = line;
  run->nccl_version = version;
  run->nccl_algo = std::exchange(pending_algo, std::nullopt);
  run->nccl_proto = std::exchange(pending_proto, std::nullopt);
  run->nccl_min_channels = std::exchange(pending_min_channels, std::nullopt);
  run->nccl_max_channels = std::exchange(pending_max_channels, std::nullopt);
  for (std::size_t i = 0; i + 1 < t.size(); ++i)
    if (t[i] == "nGpus") {
      const auto g = whole(t[i + 1]);
      if (!g || *g < 1 || *g > 1024) fail(line, "nGpus followed by a GPU count from 1 to 1024");
      run->gpus_per_thread = static_cast<int>(*g);
    } else if (t[i] == "iters:" && (i == 0 || (t[i - 1] != "warmup" && t[i - 1] != "agg"))) {
      // "warmup iters: 5 iters: 20 agg iters: 1": the timed iterations are the bare one.
      const auto n = whole(t[i + 1]);
      if (!n || *n < 1 || *n > 1000000) fail(line, "iters: followed by an iteration count from 1 to 1000000");
      run->iters = static_cast<int>(*n);
    }
  cols.reset();
  hosts.clear();
  complete = false;
}

void Reader::rank_line(const std::vector<std::string>& t, int line) {
  if (!run) fail(line, "a \"# nThread ...\" header before the rank lines");
  const auto on = std::find(t.begin(), t.end(), "on");
  const auto dev = std::find(t.begin(), t.end(), "device");
  if (on == t.end() || on + 1 >= t.end() || dev == t.end() || dev + 2 >= t.end())
    fail(line, "a rank line \"#  Rank N ... on HOST device D [BUS] NAME\"");
  hosts.push_back(*(on + 1));
  if (run->device.empty()) {
    std::string name;
    for (auto it = dev + 3; it < t.end(); ++it) name += (name.empty() ? "" : " ") + *it;
    run->device = name;
  }
}

void Reader::row(const std::vector<std::string>& t, int line) {
  if (!run || !cols) fail(line, "the \"# nThread\" header and the column header before the first row");
  const Columns& c = *cols;
  if (t.size() < c.width)
    fail(line, "a row of " + std::to_string(c.width) + " columns, as the header at line " + std::to_string(c.line) +
                   " says; got " + std::to_string(t.size()) + " (is the log cut short?)");
  NcclTestsRow r;
  r.line = line;
  const auto at = [&](int i) { return t[static_cast<std::size_t>(i)]; };
  const auto size = whole(at(c.size)), count = whole(at(c.count));
  const auto time = number(at(c.time)), algbw = number(at(c.algbw)), busbw = number(at(c.busbw));
  if (!size || !count) fail(line, "a size in bytes and a count of elements (whole numbers)");
  // Sizes below one element per rank: nccl-tests prints them, but nothing moved.
  if (*size == 0 || *count == 0) return;
  if (!time || !(*time > 0) || !algbw || !busbw) fail(line, "a positive time in us and numeric algbw and busbw");
  r.size_bytes = *size;
  r.count = *count;
  r.type = at(c.type);
  if (nccl_tests_type_bytes(r.type) == 0) fail(line, "an nccl-tests data type (float, half, bfloat16, double, int8, ...), got \"" + r.type + "\"");
  if (c.redop >= 0) {
    r.redop = at(c.redop);
    if (r.redop != "none" && !nccl_tests_redop(r.redop))
      fail(line, "an nccl-tests reduction (sum, prod, max, min, avg, mulsum, or none), got \"" + r.redop + "\"");
  }
  if (c.root >= 0) {
    const auto root = number(at(c.root));
    if (!root) fail(line, "a root rank or -1");
    r.root = static_cast<int>(*root);
  }
  r.time_us = *time;
  r.algbw_GBps = *algbw;
  r.busbw_GBps = *busbw;
  if (c.wrong >= 0 && at(c.wrong) != "N/A") {
    const auto w = number(at(c.wrong));
    if (!w) fail(line, "a #wrong count or N/A");
    // A float sum over a few ranks deviates by rounding (1e-7); a real corruption by far more.
    const bool bad = c.wrong_is_max_error ? *w > 1e-3 : *w != 0;
    r.wrong = bad ? std::max<std::int64_t>(1, static_cast<std::int64_t>(*w)) : 0;
  }
  if (c.inplace_time >= 0) r.inplace_time_us = number(at(c.inplace_time)).value_or(0);
  run->rows.push_back(std::move(r));
}

// The release a version line names: "# nccl-tests version 2.13.9 nccl-headers=21805
// nccl-library=21805", printed before a run's header, or NCCL's "NCCL version 2.18.5+cuda12.2"
// (alone or in an INFO line), printed inside it. 0: not a version line.
int version_of_line(const std::string& s) {
  if (const auto at = s.find("nccl-library="); at != std::string::npos && starts_with(s, "# nccl-tests version")) {
    const auto words = tokens_of(s.substr(at + 13));
    const auto code = words.empty() ? std::nullopt : whole(words.front());
    return code ? nccl_version_of_code(*code) : 0;
  }
  const auto at = s.find("NCCL version ");
  if (at == std::string::npos) return 0;
  const auto words = tokens_of(s.substr(at + 13));
  if (words.empty()) return 0;
  // NCCL prints all three parts, then "+cuda..." (the cluster file's own form, without it).
  const std::string v = words.front().substr(0, words.front().find('+'));
  const auto version = std::count(v.begin(), v.end(), '.') == 2 ? parse_nccl_version(v) : std::nullopt;
  return version.value_or(0);
}

// NCCL's "NCCL_ALGO set by environment to VALUE" (and NCCL_PROTO's), in an INFO line: the run's
// pins, parsed as NCCL parses them. False: not such a line.
bool Reader::env_line(const std::string& s, int line) {
  for (const auto of : {NcclListOf::algorithms, NcclListOf::protocols}) {
    const std::string key = of == NcclListOf::algorithms ? "NCCL_ALGO set by environment to " : "NCCL_PROTO set by environment to ";
    const auto at = s.find(key);
    if (at == std::string::npos) continue;
    const auto words = tokens_of(s.substr(at + key.size()));
    std::string why;
    auto list = words.empty() ? std::nullopt : parse_nccl_list(of, words.front(), &why);
    if (!list) fail(line, "a value of " + key.substr(0, key.find(' ')) + " as NCCL reads it: " + (words.empty() ? "none given" : why));
    auto& slot = run ? (of == NcclListOf::algorithms ? run->nccl_algo : run->nccl_proto)
                     : (of == NcclListOf::algorithms ? pending_algo : pending_proto);
    slot = std::move(list);
    return true;
  }
  return false;
}

// NCCL's "NCCL_MIN_NCHANNELS set by environment to 16." (NCCL_PARAM's INFO line, misc/param.cc;
// NCCL_MAX_NCHANNELS's alike): the run's channel bounds. False: not such a line.
bool Reader::channels_line(const std::string& s, int line) {
  for (const bool min : {true, false}) {
    const std::string key = min ? "NCCL_MIN_NCHANNELS set by environment to " : "NCCL_MAX_NCHANNELS set by environment to ";
    const auto at = s.find(key);
    if (at == std::string::npos) continue;
    const auto words = tokens_of(s.substr(at + key.size()));
    std::string value = words.empty() ? "" : words.front();
    if (!value.empty() && value.back() == '.') value.pop_back();  // NCCL ends the line with '.'
    const bool negative = !value.empty() && value.front() == '-';
    const auto n = whole(negative ? value.substr(1) : value);
    if (!n || *n > 1000000)
      fail(line, "a whole number of channels within +-1000000 after " + key.substr(0, key.find(' ')) + " set by environment to");
    (min ? (run ? run->nccl_min_channels : pending_min_channels) : (run ? run->nccl_max_channels : pending_max_channels)) =
        negative ? -*n : *n;
    return true;
  }
  return false;
}

void Reader::line(const std::string& raw, int line) {
  last_line = line;
  const std::string s = ltrim(raw);
  auto t = tokens_of(s);
  if (t.empty()) return;
  if (const int v = version_of_line(s)) {
    version = v;
    if (run) run->nccl_version = v;
    return;
  }
  if (env_line(s, line) || channels_line(s, line)) return;
  if (starts_with(s, "# Collective test starting:")) {
    test_name = t.back();
  } else if (starts_with(s, "# nThread")) {
    start(t, line);
  } else if (starts_with(s, "#") && t.size() > 2 && (t[1] == "Rank" || t[0] == "#Rank")) {
    rank_line(t, line);
  } else if (starts_with(s, "# Avg bus bandwidth")) {
    if (!run) fail(line, "a \"# nThread ...\" header before the summary");
    complete = true;
  } else if (starts_with(s, "#")) {
    t.erase(t.begin());
    if (auto c = columns_of(t, line)) cols = c;
  } else if (whole(t[0])) {
    row(t, line);
  }
  // Anything else (NCCL INFO lines, shell prompts) is not nccl-tests' own output.
}

}  // namespace

int nccl_version_of_code(std::int64_t code) {
  const std::int64_t major = code >= 10000 ? code / 10000 : code / 1000;
  const std::int64_t minor = code >= 10000 ? code / 100 % 100 : code % 1000 / 100;
  return major == 2 && code > 0 ? static_cast<int>(20000 + minor * 100 + code % 100) : 0;
}

namespace {

std::optional<OpKind> op_of_test_name(const std::string& name) {
  static const std::map<std::string, OpKind> ops = {{"all_reduce_perf", OpKind::allreduce},
                                                    {"reduce_scatter_perf", OpKind::reduce_scatter},
                                                    {"all_gather_perf", OpKind::allgather},
                                                    {"broadcast_perf", OpKind::broadcast},
                                                    {"reduce_perf", OpKind::reduce}};
  const auto it = ops.find(name);
  return it == ops.end() ? std::nullopt : std::optional<OpKind>(it->second);
}

// nccl-tests' tests of operations redsim does not model.
bool other_nccl_test(const std::string& name) {
  static const std::set<std::string> others = {"alltoall_perf", "sendrecv_perf", "gather_perf", "scatter_perf",
                                               "hypercube_perf"};
  return others.count(name) > 0;
}

std::optional<OpKind> op_of_file_name(const std::string& path) {
  std::string base = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  for (auto& ch : base) ch = ch == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  const auto has = [&](const char* w) { return base.find(w) != std::string::npos; };
  if (has("alltoall") || has("all_to_all") || has("sendrecv")) return std::nullopt;
  if (has("reduce_scatter") || has("reducescatter")) return OpKind::reduce_scatter;
  if (has("all_gather") || has("allgather")) return OpKind::allgather;
  if (has("all_reduce") || has("allreduce")) return OpKind::allreduce;
  if (has("broadcast") || has("bcast")) return OpKind::broadcast;
  if (has("reduce")) return OpKind::reduce;
  return std::nullopt;
}

// Without a test name or a telling file name, the columns say it: a root means broadcast (no
// reduction) or reduce; otherwise no reduction is allgather, and a count of size / ranks elements
// reduce-scatter.
std::optional<OpKind> op_of_columns(const NcclTestsRow& r, int ranks) {
  const bool reduces = !r.redop.empty() && r.redop != "none";
  if (r.root >= 0) return reduces ? OpKind::reduce : OpKind::broadcast;
  if (!reduces) return r.redop.empty() ? std::nullopt : std::optional<OpKind>(OpKind::allgather);
  const std::int64_t elem = nccl_tests_type_bytes(r.type);
  if (r.count * elem == r.size_bytes) return OpKind::allreduce;
  if (r.count * elem * ranks == r.size_bytes) return OpKind::reduce_scatter;
  return std::nullopt;
}

void Reader::finish() {
  NcclTestsRun r = std::move(*run);
  run.reset();
  if (!complete) fail(last_line, "the \"# Avg bus bandwidth\" line that ends a run (the log is cut short)");
  if (r.rows.empty()) fail(last_line, "at least one result row in the run that starts at line " + std::to_string(r.first_line));
  if (hosts.empty()) fail(r.first_line, "\"#  Rank N ... on HOST device ...\" lines after the header (they tell the ranks)");
  std::map<std::string, int> per_host;
  std::vector<std::string> order;
  for (const auto& h : hosts)
    if (per_host[h]++ == 0) order.push_back(h);
  r.ranks = static_cast<int>(hosts.size());
  r.nodes = static_cast<int>(order.size());
  r.devices_per_node = r.ranks / r.nodes;
  for (const auto& [h, n] : per_host)
    if (n != r.devices_per_node) fail(r.first_line, "the same number of ranks on every host (" + h + " has " + std::to_string(n) + ")");
  // A process drives nGpus GPUs of its own host, so each host's ranks come in whole processes.
  if (r.devices_per_node % r.gpus_per_thread != 0)
    fail(r.first_line, "each host's ranks in whole processes of nGpus " + std::to_string(r.gpus_per_thread) + " GPUs (" +
                           std::to_string(r.devices_per_node) + " ranks a host)");
  if (!run_test_name.empty()) {
    const auto op = op_of_test_name(run_test_name);
    if (!op && skipped && other_nccl_test(run_test_name)) {
      skipped->push_back(NcclTestsSkip{file, r.first_line, run_test_name});
      return;
    }
    if (!op) fail(r.first_line, "an allreduce, reduce_scatter, allgather, broadcast or reduce test, got " + run_test_name);
    r.op = *op, r.op_from = "test name line";
  } else if (const auto op = op_of_file_name(file)) {
    r.op = *op, r.op_from = "file name";
  } else if (const auto op = op_of_columns(r.rows.front(), r.ranks)) {
    r.op = *op, r.op_from = "columns";
  } else {
    fail(r.first_line, "a log whose op can be told (name the file after the test, e.g. all_reduce_perf.log)");
  }
  runs.push_back(std::move(r));
}

}  // namespace

std::vector<NcclTestsRun> parse_nccl_tests_log(std::istream& in, const std::string& file,
                                               std::vector<NcclTestsSkip>* skipped) {
  Reader r;
  r.file = file;
  r.skipped = skipped;
  const std::size_t skipped_before = skipped ? skipped->size() : 0;
  std::string raw;
  int n = 0;
  while (std::getline(in, raw)) {
    if (++n > 1'000'000) r.fail(n, "at most 1,000,000 lines");
    if (raw.size() > 4096) r.fail(n, "lines of at most 4096 characters");
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    r.line(raw, n);
  }
  if (r.run) r.finish();
  if (r.runs.empty() && skipped && skipped->size() > skipped_before) {
    std::string tests;
    for (auto i = skipped_before; i < skipped->size(); ++i) tests += (tests.empty() ? "" : ", ") + (*skipped)[i].test;
    r.fail((*skipped)[skipped_before].line,
           "an allreduce, reduce_scatter, allgather, broadcast or reduce run; the log has only " + tests);
  }
  if (r.runs.empty()) r.fail(std::max(1, n), "nccl-tests output (a \"# nThread ...\" header, rank lines and result rows)");
  return r.runs;
}

std::string skipped_run_note(const NcclTestsSkip& k) {
  return k.file + ": line " + std::to_string(k.line) + ": " + k.test +
         " left out (redsim models allreduce, reduce_scatter, allgather, broadcast and reduce)";
}

std::vector<NcclTestsRun> read_nccl_tests_log(const std::string& file, std::vector<NcclTestsSkip>* skipped) {
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) throw InputError(file, "", "expected an nccl-tests log, got a directory");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(file, "", "cannot open the file");
  return parse_nccl_tests_log(in, file, skipped);
}

namespace {
struct NcclTestsType {
  int bytes;
  DType dtype;  // the redsim type of that size that NVLS treats alike (nccl_tests_dtype)
};
const std::map<std::string, NcclTestsType>& nccl_tests_types() {
  // nccl-tests' -d names (src/common.cu test_typenames), and older logs' "int" and "char".
  static const std::map<std::string, NcclTestsType> types = {
      {"float", {4, DType::fp32}},   {"half", {2, DType::fp16}},   {"bfloat16", {2, DType::bf16}},
      {"double", {8, DType::fp64}},  {"int8", {1, DType::uint8}},  {"uint8", {1, DType::uint8}},
      {"int32", {4, DType::int32}},  {"uint32", {4, DType::int32}}, {"int64", {8, DType::int64}},
      {"uint64", {8, DType::int64}}, {"int", {4, DType::int32}},    {"char", {1, DType::uint8}},
      {"f8e4m3", {1, DType::uint8}}, {"f8e5m2", {1, DType::uint8}}, {"fp8_e4m3", {1, DType::uint8}},
      {"fp8_e5m2", {1, DType::uint8}}};
  return types;
}
}  // namespace

int nccl_tests_type_bytes(const std::string& type) {
  const auto it = nccl_tests_types().find(type);
  return it == nccl_tests_types().end() ? 0 : it->second.bytes;
}

std::optional<ReduceOp> nccl_tests_redop(const std::string& op) {
  // mulsum is ncclRedOpCreatePreMulSum: a sum with a pre-multiplication, as ncclAvg is on
  // floating point (2.18.5 enqueue.cc hostToDevRedOp), and like it no reduction NVLS does.
  if (op == "mulsum") return ReduceOp::avg;
  if (op == "sum" || op == "prod" || op == "max" || op == "min" || op == "avg") return parse_reduce_op(op);
  return std::nullopt;
}

std::optional<DType> nccl_tests_dtype(const std::string& type) {
  const auto it = nccl_tests_types().find(type);
  if (it == nccl_tests_types().end()) return std::nullopt;
  return it->second.dtype;
}

}  // namespace redsim
