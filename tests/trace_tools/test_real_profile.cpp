// Real PyTorch profiles (tests/data/profiles/README.md): HolisticTraceAnalysis's DDP steps of rank
// 0 of 2 and rank 3 of 8 on A100s, imported, calibrated from and validated against, as a user
// would with their own. The numbers checked come from the model, DDP's rules or the file's own
// events counted here, not from redsim's output.
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/trace_json.h"
#include "trace_tools/kineto_import.h"
#include "tool_runner.h"

using namespace redsim;
using namespace redsim::testing;
using nlohmann::json;

namespace {
const std::string kProfile = std::string(REDSIM_SOURCE_DIR) + "/tests/data/profiles/hta_resnet50_ddp_2xa100_rank0.json.gz";
const std::string kA100 = std::string(REDSIM_SOURCE_DIR) + "/configs/dgx-a100.json";
// torchvision's resnet50: 25,557,032 parameters (its model card, ResNet50_Weights.IMAGENET1K_V1).
constexpr std::int64_t kResnet50Params = 25'557'032;
// Its classifier, fc = Linear(2048, 1000): weight and bias.
constexpr std::int64_t kFcParams = 2048 * 1000 + 1000;
// Its parameter tensors: 53 convolutions (the stem, 16 bottlenecks of 3 and 4 downsamples), each
// without bias and followed by a batch norm's weight and bias, and fc's two.
constexpr std::int64_t kResnet50Tensors = 53 + 2 * 53 + 2;

// trace import of `profile` into dir/t.json, with its measured steps in dir/m.json; `slowdown`, when
// given, is the --compute-slowdown taken out of the compute.
RunResult import_profile(const std::string& profile, const TempDir& dir, const std::string& slowdown = "") {
  return run_redsim("trace import --kineto " + quote(profile) + " --out " + quote(dir / "t.json") + " --measured " +
                        quote(dir / "m.json") + (slowdown.empty() ? "" : " --compute-slowdown " + slowdown),
                    dir);
}

// The --compute-slowdown of a cluster file's interference: its factor exactly, or the rule's name.
std::string slowdown_of(const json& cluster) {
  const json& s = cluster["interference"]["compute_slowdown"];
  if (s.is_string()) return s.get<std::string>();
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", s.get<double>());
  return buf;
}

// DDP's buckets as imported: their sizes by DDP's rule, their channels the kernels' grid.
void check_buckets(const TempDir& dir) {
  // DDP fills buckets in reverse registration order, and its first bucket closes at 1 MiB: the
  // classifier comes first, and its 8 MB weight closes the bucket alone with its bias.
  const json m = json::parse(read_file(dir / "m.json"));
  std::vector<std::int64_t> bytes;
  for (const auto& c : m["summary"]["collectives"])
    if (c["kind"] == "allreduce") bytes.push_back(c["bytes"]);
  REQUIRE(bytes.size() == 5);
  CHECK(bytes.front() == kFcParams * 4);
  // NCCL runs a block per channel: the buckets' channels are their kernels' grid, read here.
  std::set<int> grids;
  const json raw = json::parse(read_text_file_maybe_gzip(kProfile));
  for (const auto& e : raw["traceEvents"])
    if (e.value("cat", "") == "kernel" && e.value("name", "").rfind("ncclKernel_AllReduce", 0) == 0)
      grids.insert(e["args"]["grid"][0].get<int>());
  REQUIRE(grids.size() == 1);
  for (const auto& c : m["summary"]["collectives"])
    if (c["kind"] == "allreduce") CHECK(c["channels"] == *grids.begin());
  CHECK(m["measurement"]["step_times_s"].size() == 3);
  CHECK(m["cluster"]["world_size"] == 2);
}

// calibrate from the profile, and the double count of its interference refused until re-imported.
void calibrate_and_reimport(const TempDir& dir, const ModelTrace& t) {
  // On the 8-GPU preset the 2-rank job fits on.
  auto r = run_redsim("calibrate --from-profile " + quote(kProfile) + " --cluster " + quote(kA100) + " --out " +
                          quote(dir / "fit.json"),
                      dir);
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("15 gradient buckets in 3 step(s)"));  // 5 buckets x 3 steps
  const json fit = json::parse(read_file(dir / "fit.json"));
  CHECK(fit["framework"]["bucket_overhead_us"].get<double>() > 0);
  CHECK(fit["framework"]["copy_out_us_per_tensor"].get<double>() > 0);  // DDP's copy_bucket_to_grad, a tensor at a time
  // Its compute kernels ran beside NCCL's (the fit's evidence): imported as measured they already
  // hold the slowdown the fitted cluster adds, so the pair is refused until one of them drops it.
  CHECK(t.compute_beside_collectives);
  REQUIRE(fit["interference"]["compute_slowdown"].get<double>() > 1);
  r = run_redsim("simulate --trace " + quote(dir / "t.json") + " --cluster " + quote(dir / "fit.json") +
                     " --layout 1x2 --compute-scale 1",
                 dir);
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("t.json: $.compute_timed") &&
                        Catch::Contains("--compute-slowdown " + slowdown_of(fit).substr(0, 5)));
  r = import_profile(kProfile, dir, slowdown_of(fit));
  REQUIRE(r.status == 0);
  CHECK_FALSE(load_trace(dir / "t.json").compute_beside_collectives);
}

// validate on the fitted cluster and on the preset, by --layout and by --matrix.
void check_validate(const TempDir& dir) {
  // The profile's 2 ranks against the preset's 8: validate says how to compare them.
  const std::string v = "validate --trace " + quote(dir / "t.json") + " --config " + quote(dir / "m.json") +
                        " --measured " + quote(dir / "m.json") + " --compute-scale 1 --cluster ";
  auto r = run_redsim(v + quote(dir / "fit.json"), dir);
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("$.timeline.world_size") && Catch::Contains("--layout"));

  // On two devices of the node, with the fitted per-bucket cost (framework ops the profile lacks).
  r = run_redsim(v + quote(dir / "fit.json") + " --layout 1x2 --max-error 1 --out " + quote(dir / "v.json"), dir);
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("(1 x 2)") && Catch::Contains("no framework ops") &&
                        Catch::Contains("op start error"));
  const json val = json::parse(read_file(dir / "v.json"));
  CHECK(val["cluster"]["world_size"] == 2);
  CHECK(val["measured"]["has_timeline"] == true);
  CHECK(val["measured"]["steps"] == 3);
  // A --matrix case may name its own layout; a bad one is named by the case.
  // The preset slows compute by the SM-share rule: the import takes the rule out instead.
  r = import_profile(kProfile, dir, "sm_share");
  REQUIRE(r.status == 0);
  write_file(dir / "matrix.json", R"([{"layout": "1x2", "label": "two of eight"}])");
  write_file(dir / "bad-matrix.json", R"([{"layout": "1x2"}, {"layout": "1x9"}])");
  const std::string vm = "validate --trace " + quote(dir / "t.json") + " --config " + quote(dir / "m.json") +
                         " --measured " + quote(dir / "m.json") + " --compute-scale 1 --max-error 1 --cluster " +
                         quote(kA100) + " --matrix ";
  r = run_redsim(vm + quote(dir / "matrix.json"), dir);
  INFO(r.out << r.err);
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("two of eight"));
  r = run_redsim(vm + quote(dir / "bad-matrix.json"), dir);
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("bad-matrix.json: $[1]") && Catch::Contains("--layout: expected a layout within"));
}
}  // namespace

TEST_CASE("a real profile: resnet50 DDP on 2 A100s imports, calibrates and validates on part of a preset",
          "[trace_tools][import][real]") {
  TempDir dir;
  auto r = import_profile(kProfile, dir);
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("rank 0 of 2") && Catch::Contains("NVIDIA A100-PG509-200") &&
                        Catch::Contains("mean of steps 4-6") && Catch::Contains("5 gradient allreduces"));

  // Every gradient is reduced once: the buckets hold the whole model.
  const ModelTrace t = load_trace(dir / "t.json");
  std::int64_t params = 0, tensors = 0;
  for (const auto& p : t.params) params += p.numel, tensors += p.tensors;
  CHECK(params == kResnet50Params);
  CHECK(tensors == kResnet50Tensors);  // autograd's AccumulateGrad ops, one a gradient
  CHECK(t.reference_device == "NVIDIA A100-PG509-200");

  check_buckets(dir);
  calibrate_and_reimport(dir, t);
  check_validate(dir);
}

TEST_CASE("a real profile of 8 A100s with other collectives beside DDP's imports, says what it leaves out, and validates",
          "[trace_tools][import][real]") {
  const std::string profile = std::string(REDSIM_SOURCE_DIR) + "/tests/data/profiles/hta_ddp_sendrecv_8xa100_rank3.json.gz";
  // What the file holds, counted here: its NCCL kernels per profiler step, and whether DDP copied
  // gradients back out of its buckets.
  const json raw = json::parse(read_text_file_maybe_gzip(profile));
  int steps = 0, sendrecv = 0, copies_out = 0;
  for (const auto& e : raw["traceEvents"]) {
    const std::string name = e.value("name", "");
    steps += name.rfind("ProfilerStep#", 0) == 0 && e.value("ph", "") == "X" ? 1 : 0;
    sendrecv += e.value("cat", "") == "kernel" && name.rfind("ncclKernel_SendRecv", 0) == 0 ? 1 : 0;
    copies_out += name == "torch.distributed.ddp.reducer::copy_bucket_to_grad" ? 1 : 0;
  }
  REQUIRE(steps == 6);
  REQUIRE(sendrecv % steps == 0);

  TempDir dir;
  auto r = import_profile(profile, dir);
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("rank 3 of 8") && Catch::Contains("mean of steps 1009-1014") &&
                        Catch::Contains("3 gradient allreduces"));
  // The point-to-point kernels are not DDP's: left out, and said so on stderr.
  CHECK_THAT(r.err, Catch::Contains(std::to_string(sendrecv / steps) + " NCCL collective(s) per step that are not "
                                                                        "gradient buckets"));

  r = run_redsim("calibrate --from-profile " + quote(profile) + " --cluster " + quote(kA100) + " --out " +
                     quote(dir / "fit.json"),
                 dir);
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  REQUIRE(copies_out == 0);  // gradient_as_bucket_view=True, or a PyTorch without the op
  CHECK_THAT(r.out, Catch::Contains("$.framework.copy_out_us_per_tensor") && Catch::Contains("not fitted: no step copied"));

  // The job's 8 ranks are the whole preset: no --layout. Its compute is timed alone for the fit.
  r = import_profile(profile, dir, slowdown_of(json::parse(read_file(dir / "fit.json"))));
  REQUIRE(r.status == 0);
  r = run_redsim("validate --trace " + quote(dir / "t.json") + " --cluster " + quote(dir / "fit.json") + " --config " +
                     quote(dir / "m.json") + " --measured " + quote(dir / "m.json") + " --compute-scale 1 --max-error 1",
                 dir);
  INFO(r.out << r.err);
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("op start error"));
}
