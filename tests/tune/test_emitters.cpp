// The snippets for the frameworks parse and carry correctly converted units: DDP's bucket_cap_mb
// in MiB (25 MiB = 26,214,400 bytes), Horovod's fusion threshold in bytes, DeepSpeed's bucket
// sizes in elements (a 500 MB fp16 bucket is 250,000,000 elements), NCCL's channels.
#include <catch2/catch.hpp>

#include <map>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/units.h"
#include "tests/test_support.h"
#include "tune/emitters.h"

using namespace redsim;
using namespace redsim::tune;

namespace {

// KEY=VALUE lines; comments (#) and blank lines skipped; anything else fails the test.
std::map<std::string, std::string> parse_env(const std::string& text) {
  std::map<std::string, std::string> env;
  std::istringstream in(text);
  std::string line;
  const std::regex kv("^([A-Z_][A-Z0-9_]*)=([^ \t#]+)$");
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::smatch m;
    INFO("line: " << line);
    REQUIRE(std::regex_match(line, m, kv));
    CHECK(env.count(m[1]) == 0);
    env[m[1]] = m[2];
  }
  return env;
}

const Snippet& find(const std::vector<Snippet>& s, const std::string& file) {
  for (const auto& x : s)
    if (x.file == file) return x;
  FAIL("no snippet " << file);
  return s.front();
}

EmitInputs inputs(const ModelTrace& trace, const ClusterSpec& cluster, const std::string& family, const Knobs& k) {
  EmitInputs in;
  in.trace = &trace;
  in.cluster = &cluster;
  in.microbatches = k.microbatches;
  in.chosen = {family, k};
  in.chosen_objective_s = 0.123;
  return in;
}

}  // namespace

TEST_CASE("unit conversions", "[tune][emit]") {
  CHECK(ddp_bucket_cap_mb(26'214'400) == "25");
  CHECK(ddp_bucket_cap_mb(kMiB / 2) == "0.5");
  CHECK(ddp_bucket_cap_mb(1'310'720) == "1.25");
  CHECK(deepspeed_elements(500'000'000, 2) == 250'000'000);
  CHECK(deepspeed_elements(64 * kMiB, 4) == 16 * kMiB);
}

TEST_CASE("DDP, Horovod and NCCL snippets for a bucketed setting", "[tune][emit]") {
  const auto trace = testing::uniform_trace(8, 1 << 20, 1e-4, 2e-4, 1e-4);
  const auto cluster = testing::ideal_multi_node(2, 4, 1e11, 1e-6, 1e10, 5e-6);
  Knobs k;
  k.bucket_cap_bytes = 25 * kMiB;
  k.first_bucket_cap_bytes = 4 * kMiB;
  k.channels = 8;
  k.algorithm = Algorithm::hierarchical;
  const auto s = emit_snippets(inputs(trace, cluster, "bucketed", k));
  const auto& ddp = find(s, "pytorch_ddp.py").contents;
  CHECK(ddp.find("bucket_cap_mb=25,  # MiB: 25 MiB = 26,214,400 bytes") != std::string::npos);
  CHECK(ddp.find("dist._DEFAULT_FIRST_BUCKET_BYTES = 4194304\n") != std::string::npos);
  CHECK(ddp.find("gradient_as_bucket_view=True") != std::string::npos);
  CHECK(ddp.find("no_sync") == std::string::npos);

  const auto hvd = parse_env(find(s, "horovod.env").contents);
  CHECK(hvd.at("HOROVOD_FUSION_THRESHOLD") == "26214400");
  CHECK(hvd.at("HOROVOD_HIERARCHICAL_ALLREDUCE") == "1");
  CHECK(find(s, "horovod.env").contents.find("26,214,400 bytes") != std::string::npos);

  const auto nccl = parse_env(find(s, "nccl.env").contents);
  CHECK(nccl.at("NCCL_ALGO") == "Ring");
  CHECK(nccl.at("NCCL_MIN_NCHANNELS") == "8");
  CHECK(nccl.at("NCCL_MAX_NCHANNELS") == "8");

  k.algorithm = Algorithm::tree;
  const auto t = emit_snippets(inputs(trace, cluster, "bucketed", k));
  CHECK(parse_env(find(t, "nccl.env").contents).at("NCCL_ALGO") == "Tree");
  CHECK(parse_env(find(t, "horovod.env").contents).at("HOROVOD_HIERARCHICAL_ALLREDUCE") == "0");
}

TEST_CASE("NCCL_ALGO in the release's syntax: a bare name to 2.23, per collective from 2.24", "[tune][emit]") {
  // NCCL 2.24+ fails a collective a bare NCCL_ALGO=Tree leaves without an algorithm (DDP's first
  // broadcast, FSDP's allgathers), and parses "function:list" entries split by ';'
  // (src/graph/tuning.cc parseList).
  const auto trace = testing::uniform_trace(8, 1 << 20, 1e-4, 2e-4, 1e-4);
  auto cluster = testing::ideal_multi_node(2, 4, 1e11, 1e-6, 1e10, 5e-6);
  Knobs k;
  k.bucket_cap_bytes = 25 * kMiB;
  k.algorithm = Algorithm::tree;
  cluster.nccl_version = 22304;
  CHECK(parse_env(find(emit_snippets(inputs(trace, cluster, "bucketed", k)), "nccl.env").contents).at("NCCL_ALGO") ==
        "Tree");
  cluster.nccl_version = 22907;
  const auto tree = find(emit_snippets(inputs(trace, cluster, "bucketed", k)), "nccl.env").contents;
  CHECK(parse_env(tree).at("NCCL_ALGO") == "allreduce:Tree");
  CHECK(tree.find("the other collectives keep NCCL's own choice") != std::string::npos);
  // The PAT form holds ';', which would end a shell command unquoted.
  k.algorithm = Algorithm::pat;
  CHECK(parse_env(find(emit_snippets(inputs(trace, cluster, "fsdp", k)), "nccl.env").contents).at("NCCL_ALGO") ==
        "\"allgather:PAT;reducescatter:PAT\"");
  k.algorithm = Algorithm::ring;
  CHECK(parse_env(find(emit_snippets(inputs(trace, cluster, "bucketed", k)), "nccl.env").contents).at("NCCL_ALGO") ==
        "Ring");
}

TEST_CASE("DeepSpeed counts elements: a 500 MB fp16 bucket is 250,000,000", "[tune][emit]") {
  auto trace = testing::uniform_trace(8, 1 << 20, 1e-4, 2e-4, 1e-4);
  for (auto& p : trace.params) p.dtype = DType::fp16;
  trace.batch_size_per_rank = 2;
  const auto cluster = testing::ideal_multi_node(2, 4, 1e11, 1e-6, 1e10, 5e-6);
  Knobs k;
  k.strategy = "zero";
  k.zero_stage = 1;
  k.bucket_cap_bytes = 500'000'000;
  k.allgather_bucket_bytes = 200'000'000;
  auto in = inputs(trace, cluster, "zero", k);
  in.microbatches = 4;
  const auto s = emit_snippets(in);
  const auto& ds = find(s, "deepspeed_config.json");
  const auto j = nlohmann::json::parse(ds.contents);
  CHECK(j.at("zero_optimization").at("stage") == 1);
  CHECK(j.at("zero_optimization").at("reduce_bucket_size") == 250'000'000);
  CHECK(j.at("zero_optimization").at("allgather_bucket_size") == 100'000'000);
  CHECK(j.at("zero_optimization").at("overlap_comm") == true);
  CHECK(j.at("zero_optimization").at("contiguous_gradients") == true);
  CHECK(j.at("zero_optimization").at("reduce_scatter") == true);
  CHECK(j.at("gradient_accumulation_steps") == 4);
  CHECK(j.at("train_micro_batch_size_per_gpu") == 2);
  CHECK(j.at("train_batch_size") == 2 * 4 * 8);
  CHECK(ds.comment.find("500,000,000 bytes") != std::string::npos);
  CHECK(ds.comment.find("= 250,000,000 elements") != std::string::npos);
  // The wire dtype sets both DeepSpeed's communication type and the element size.
  k.wire_dtype = DType::bf16;
  auto trace32 = testing::uniform_trace(8, 1 << 20, 1e-4, 2e-4, 1e-4);
  const auto j2 = nlohmann::json::parse(find(emit_snippets(inputs(trace32, cluster, "zero", k)), "deepspeed_config.json").contents);
  CHECK(j2.at("communication_data_type") == "bf16");
  CHECK(j2.at("zero_optimization").at("reduce_bucket_size") == 250'000'000);
  CHECK(j2.at("zero_optimization").at("allgather_bucket_size") == 50'000'000);  // fp32 parameters
}

TEST_CASE("accumulation, LocalSGD and flat in DDP terms", "[tune][emit]") {
  const auto trace = testing::uniform_trace(8, 1 << 20, 1e-4, 2e-4, 1e-4);  // 32 MiB of gradients
  const auto cluster = testing::ideal_star(4, 1e10, 1e-6);
  Knobs acc;
  acc.strategy = "accumulate";
  acc.microbatches = 4;
  const auto a = find(emit_snippets(inputs(trace, cluster, "accumulate", acc)), "pytorch_ddp.py").contents;
  CHECK(a.find("model.no_sync()") != std::string::npos);
  CHECK(a.find("sync = i == 4 - 1") != std::string::npos);
  CHECK(a.find("/ 4") != std::string::npos);
  const auto ah = parse_env(find(emit_snippets(inputs(trace, cluster, "accumulate", acc)), "horovod.env").contents);
  CHECK(ah.size() == 2);

  Knobs l;
  l.strategy = "localsgd";
  l.localsgd_period = 8;
  const auto ls = find(emit_snippets(inputs(trace, cluster, "localsgd", l)), "pytorch_ddp.py").contents;
  CHECK(ls.find("PeriodicModelAverager(period=8") != std::string::npos);
  CHECK(ls.find("post_localSGD_hook") != std::string::npos);

  Knobs f;
  f.strategy = "flat";
  const auto fl = emit_snippets(inputs(trace, cluster, "flat", f));
  CHECK(find(fl, "pytorch_ddp.py").contents.find("bucket_cap_mb=32,") != std::string::npos);
  CHECK(find(fl, "pytorch_ddp.py").contents.find("_DEFAULT_FIRST_BUCKET_BYTES = 33554432") != std::string::npos);
  CHECK(parse_env(find(fl, "horovod.env").contents).at("HOROVOD_FUSION_THRESHOLD") == "33554432");
}

TEST_CASE("a ZeRO pick still gets the best DDP setting for DDP and Horovod", "[tune][emit]") {
  const auto trace = testing::uniform_trace(8, 1 << 20, 1e-4, 2e-4, 1e-4);
  const auto cluster = testing::ideal_star(4, 1e10, 1e-6);
  Knobs z;
  z.strategy = "zero";
  auto in = inputs(trace, cluster, "zero", z);
  CHECK(find(emit_snippets(in), "pytorch_ddp.py").contents.find("bucket_cap_mb") == std::string::npos);
  Knobs b;
  b.bucket_cap_bytes = 64 * kMiB;
  in.best_ddp = Candidate{"bucketed", b};
  in.best_ddp_objective_s = 0.2;
  const auto s = emit_snippets(in);
  CHECK(find(s, "pytorch_ddp.py").contents.find("bucket_cap_mb=64,") != std::string::npos);
  CHECK(find(s, "pytorch_ddp.py").contents.find("redsim's pick is zero") != std::string::npos);
  CHECK(parse_env(find(s, "horovod.env").contents).at("HOROVOD_FUSION_THRESHOLD") == "67108864");
  CHECK(nlohmann::json::parse(find(s, "deepspeed_config.json").contents).at("zero_optimization").at("stage") == 2);
}
