// calibrate --from-profile's fit (trace_tools/profile_fit.h) recovers known interference factors
// and per-bucket overhead from synthetic profiler traces built to the simulator's rule
// (sim/interference.h): work beside the other kind for a fraction phi of its time d runs at 1/s
// there, so its time alone is d0 = d (1 - phi + phi / s).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "core/trace_json.h"
#include "tests/test_support.h"
#include "tests/trace_tools/kineto_builder.h"
#include "tests/trace_tools/tool_runner.h"
#include "trace_tools/kineto_import.h"
#include "trace_tools/profile_fit.h"

using namespace redsim;
using namespace redsim::testing;

namespace {

constexpr double kF = 1.25, kG = 1.5;        // compute and collective slowdowns built in
constexpr double kLaunchUs = 5, kOverheadUs = 30;  // the cluster's launch cost and the framework's
// Kineto's microsecond timestamps near 1.7e12 hold durations to about 2e-4 us, hence 1e-6 below.
// The model's time alone for a collective of `bytes` (the test's predictor): any size law works,
// since the fit divides by it.
double alone_us(std::int64_t bytes) { return 10 + static_cast<double>(bytes) / 1e4; }

// One DDP step: kernels 20 and 21 run alone in forward and again in backward beside bucket 0's
// allreduce, which compute covers throughout; bucket 1's allreduce runs alone after backward.
// Both allreduces start kLaunchUs + kOverheadUs after their gradients are ready.
KStep interference_step(std::int64_t number) {
  KStep s;
  s.number = number;
  s.length_us = 1500;
  const double ar0_start = 850 + kLaunchUs + kOverheadUs;  // bucket 0 is ready when b1 ends at 850
  const double ar0_dur = alone_us(262'144 * 4) * kG;
  const double ar0_end = ar0_start + ar0_dur;
  const double phi20 = (960 - ar0_start) / 80, phi21 = (ar0_end - 960) / 100;  // kernel 20: 880-960, 21: 960-1060
  auto add = [&](double launch, double start, double dur, KPhase phase, int id) {
    s.compute.push_back({launch, start, dur, phase, id});
  };
  add(20, 100, 80 * (1 - phi20 + phi20 / kF), KPhase::forward, 20);  // alone
  add(30, 200, 100 * (1 - phi21 + phi21 / kF), KPhase::forward, 21);
  add(40, 300, 80, KPhase::forward, 22);
  add(400, 500, 150, KPhase::backward, 30);
  add(420, 700, 150, KPhase::backward, 31);
  add(440, 880, 80, KPhase::backward, 20);  // beside bucket 0's allreduce
  add(450, 960, 100, KPhase::backward, 21);
  add(460, 1070, 130, KPhase::backward, 32);  // ends at 1200: bucket 1 ready
  add(1250, 1300, 40, KPhase::optimizer, 40);
  add(1260, 1350, 40, KPhase::optimizer, 41);
  s.comm.push_back({430, ar0_start, ar0_dur, "allreduce", 262'144, "Float", KPhase::backward});
  s.comm.push_back({470, 1200 + kLaunchUs + kOverheadUs, alone_us(4000), "allreduce", 1000, "Float", KPhase::backward});
  return s;
}

std::string write_trace(const nlohmann::json& j, const std::string& name) {
  const auto path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << j.dump();
  return path;
}

std::vector<double> predict(const std::vector<CollectiveQuery>& qs) {
  std::vector<double> us;
  for (const auto& q : qs) {
    CHECK(q.world == 8);  // the built trace's group
    us.push_back(alone_us(q.bytes));
  }
  return us;
}

const ProfileParam& param(const ProfileFit& f, const std::string& name) {
  for (const auto& p : f.params)
    if (p.name == name) return p;
  FAIL("no parameter " << name);
  return f.params.front();
}

}  // namespace

TEST_CASE("the profile fit recovers the slowdowns and the per-bucket overhead it was built with",
          "[trace_tools][calibrate][interference]") {
  const auto file = write_trace(build_kineto({interference_step(1), interference_step(2)}, KBuild{}), "redsim_fit_a.json");
  auto cluster = ideal_star(8, 1e11, 0);
  cluster.collective_launch_us = kLaunchUs;
  const ProfileFit fit = fit_profiles(cluster, {file}, predict);
  CHECK(fit.steps == 2);
  CHECK(fit.buckets == 4);
  const auto& f = param(fit, "$.interference.compute_slowdown");
  CHECK(f.fitted);
  CHECK(f.evidence == 4);  // kernels 20 and 21 in each step
  CHECK(f.after == Approx(kF).epsilon(1e-6));
  const auto& g = param(fit, "$.interference.collective_slowdown");
  CHECK(g.fitted);
  CHECK(g.evidence == 2);
  CHECK(g.after == Approx(kG).epsilon(1e-6));
  const auto& o = param(fit, "$.framework.bucket_overhead_us");
  CHECK(o.evidence == 4);
  CHECK(o.after == Approx(kOverheadUs).epsilon(1e-6));
  CHECK(fit.cluster.interference.compute_slowdown == f.after);
  CHECK(fit.cluster.interference.collective_slowdown == g.after);
  CHECK(fit.cluster.framework.bucket_overhead_us == o.after);
  CHECK_FALSE(fit.cluster.interference.compute_slowdown_sm_share);

  // A cluster with the SM-share rule: the measured factor replaces it, and the note says what the
  // rule gives for the profile's grids (none here).
  cluster.device.sm_count = 108;
  cluster.interference.compute_slowdown_sm_share = true;
  const ProfileFit over_rule = fit_profiles(cluster, {file}, predict);
  CHECK(over_rule.cluster.interference.compute_slowdown == Approx(kF).epsilon(1e-6));
  CHECK_FALSE(over_rule.cluster.interference.compute_slowdown_sm_share);
  CHECK_THAT(param(over_rule, "$.interference.compute_slowdown").note, Catch::Contains("SM-share rule"));
  std::filesystem::remove(file);
}

// A step where bucket 0's allreduce runs alone: backward's kernels all end before it starts.
KStep alone_step(std::int64_t number) {
  KStep s;
  s.number = number;
  s.length_us = 1500;
  s.compute.push_back({20, 100, 80, KPhase::forward, 22});
  s.compute.push_back({400, 500, 150, KPhase::backward, 30});
  s.compute.push_back({420, 700, 150, KPhase::backward, 31});
  s.compute.push_back({1250, 1300, 40, KPhase::optimizer, 40});
  s.comm.push_back({430, 850 + kLaunchUs + kOverheadUs, alone_us(262'144 * 4), "allreduce", 262'144, "Float",
                    KPhase::backward});
  return s;
}

TEST_CASE("a collective of the same size that ran alone is the reference, whatever the model says",
          "[trace_tools][calibrate][interference]") {
  const auto file = write_trace(build_kineto({interference_step(1), alone_step(2)}, KBuild{}), "redsim_fit_c.json");
  // A predictor with no size law at all: only the same-size comparison can give g.
  const auto flat = [](const std::vector<CollectiveQuery>& qs) { return std::vector<double>(qs.size(), 1.0); };
  const ProfileFit fit = fit_profiles(ideal_star(8, 1e11, 0), {file}, flat);
  const auto& g = param(fit, "$.interference.collective_slowdown");
  CHECK(g.fitted);
  CHECK(g.evidence == 1);
  CHECK(g.after == Approx(kG).epsilon(1e-6));
  std::filesystem::remove(file);
}

TEST_CASE("trace import --compute-slowdown takes the fitted interference out of the imported compute",
          "[trace_tools][import][interference]") {
  const auto j = build_kineto({interference_step(1), interference_step(2)}, KBuild{});
  KinetoImportOptions as_measured, alone;
  alone.compute_slowdown = kF;
  const KinetoImport m = import_kineto(j, "rank3.json", as_measured), a = import_kineto(j, "rank3.json", alone);
  // Kernels 20 and 21 ran beside bucket 0's allreduce for phi20 and phi21 of their 80 and 100 us
  // and ended in the interval before bucket 1; each gave up d phi (1 - 1/f).
  const double ar0_start = 850 + kLaunchUs + kOverheadUs, ar0_end = ar0_start + alone_us(262'144 * 4) * kG;
  const double phi20 = (960 - ar0_start) / 80, phi21 = (ar0_end - 960) / 100;
  const double lost_s = (80 * phi20 + 100 * phi21) * (1 - 1 / kF) * 1e-6;
  auto backward_of = [](const KinetoImport& imp, const std::string& layer) {
    for (const auto& l : imp.trace.layers)
      if (l.name == layer) return l.backward_s;
    FAIL("no layer " << layer);
    return 0.0;
  };
  CHECK(backward_of(m, "interval1") - backward_of(a, "interval1") == Approx(lost_s).epsilon(1e-6));
  CHECK(backward_of(a, "interval0") == Approx(backward_of(m, "interval0")).epsilon(1e-12));  // nothing beside NCCL
  CHECK(a.taken_out.total_s() == Approx(lost_s).epsilon(1e-6));
  // The measured side stays as measured.
  CHECK(a.buckets[1].ready_s == m.buckets[1].ready_s);
  CHECK(a.trace.source.find("as it would run alone") != std::string::npos);
  // What the trace says of its compute: as measured it ran beside NCCL, with the factor out alone.
  CHECK(m.trace.compute_beside_collectives);
  CHECK_FALSE(a.trace.compute_beside_collectives);
  CHECK(trace_to_json(m.trace)["compute_timed"] == "beside_collectives");
  CHECK_FALSE(trace_to_json(a.trace).contains("compute_timed"));
  // A profile whose NCCL kernels never ran beside compute was timed alone as measured: the
  // example step's broadcast (50-80 us) precedes forward (from 100 us) and its last bucket
  // (1870-1970 us) falls between backward's end (1650 us) and the optimizer (from 2050 us).
  KStep quiet = example_step(1, 0);
  quiet.comm.erase(quiet.comm.begin() + 1, quiet.comm.begin() + 3);
  CHECK_FALSE(import_kineto(build_kineto({quiet}, KBuild{}), "q.json", as_measured).trace.compute_beside_collectives);
}

// The SM-share rule on a profile: a compute kernel beside an NCCL kernel of b blocks on a device of
// S SMs ran at 1 - b/S there, so it gave up its overlap o times b/S (at most half).
TEST_CASE("trace import --compute-slowdown sm_share takes each NCCL kernel's SMs out of the compute beside it",
          "[trace_tools][import][interference]") {
  constexpr int kBlocks = 2, kSms = 8;
  std::vector<KStep> steps{interference_step(1), interference_step(2)};
  for (auto& st : steps)
    for (auto& c : st.comm) c.channels = kBlocks;
  auto j = build_kineto(steps, KBuild{});
  KinetoImportOptions as_measured, rule;
  rule.compute_slowdown_sm_share = true;
  // The builder's profile gives no numSms: refused, naming where the count belongs.
  CHECK_THAT(error_of([&] { import_kineto(j, "rank3.json", rule); }),
             Catch::Contains("rank3.json") && Catch::Contains("$.deviceProperties"));
  for (auto& d : j["deviceProperties"]) d["numSms"] = kSms;
  const KinetoImport m = import_kineto(j, "rank3.json", as_measured), a = import_kineto(j, "rank3.json", rule);
  const double ar0_start = 850 + kLaunchUs + kOverheadUs, ar0_end = ar0_start + alone_us(262'144 * 4) * kG;
  const double overlap_us = (960 - ar0_start) + (ar0_end - 960);  // kernels 20 (880-960) and 21 (960-1060)
  const double lost_s = overlap_us * kBlocks / kSms * 1e-6;
  CHECK(a.taken_out.total_s() == Approx(lost_s).epsilon(1e-6));
  CHECK(a.taken_out.sm_count == kSms);
  double m_bwd = 0, a_bwd = 0;
  for (const auto& l : m.trace.layers) m_bwd += l.backward_s;
  for (const auto& l : a.trace.layers) a_bwd += l.backward_s;
  CHECK(m_bwd - a_bwd == Approx(lost_s).epsilon(1e-6));
  CHECK(a.trace.source.find("SM-share rule") != std::string::npos);
  // A given count replaces the profile's; half the SMs at most.
  rule.sm_count = 3;
  CHECK(import_kineto(j, "rank3.json", rule).taken_out.total_s() == Approx(overlap_us * 0.5 * 1e-6).epsilon(1e-6));
  // NCCL kernels without a grid beside compute: refused, naming the kernel's grid.
  for (auto& st : steps)
    for (auto& c : st.comm) c.channels = 0;
  auto no_grid = build_kineto(steps, KBuild{});
  for (auto& d : no_grid["deviceProperties"]) d["numSms"] = kSms;
  CHECK_THAT(error_of([&] { import_kineto(no_grid, "rank3.json", rule); }), Catch::Contains(".args.grid"));
}

TEST_CASE("without the evidence a parameter needs, the fit keeps the cluster's value and says why",
          "[trace_tools][calibrate][interference]") {
  // example_step: no compute kernel runs both alone and beside a collective, and every gradient
  // allreduce has compute beside it or none.
  const auto file = write_trace(build_kineto({example_step(1, 0)}, KBuild{}), "redsim_fit_b.json");
  auto cluster = ideal_star(8, 1e11, 0);
  cluster.interference.compute_slowdown = 1.1;
  const ProfileFit fit = fit_profiles(cluster, {file}, predict);
  const auto& f = param(fit, "$.interference.compute_slowdown");
  CHECK_FALSE(f.fitted);
  CHECK(f.after == 1.1);
  CHECK(f.note.find("alone and beside") != std::string::npos);
  CHECK(fit.cluster.interference.compute_slowdown == 1.1);
  std::filesystem::remove(file);
}

TEST_CASE("a malformed profile is refused naming the file", "[trace_tools][calibrate]") {
  const auto path = (std::filesystem::temp_directory_path() / "redsim_fit_bad.json").string();
  std::ofstream(path) << "{\"traceEvents\": [ {\"ph\": \"X\", \"name\": 3} ]}";
  const auto err = error_of([&] { fit_profiles(ideal_star(8, 1e11, 0), {path}, predict); });
  CHECK(err.find(path) != std::string::npos);
  std::filesystem::remove(path);
}

TEST_CASE("a profiled job larger than the cluster is refused naming the profile and its JSON path",
          "[trace_tools][calibrate]") {
  // The built kernels say "Group size": 8; a cluster of 4 ranks cannot hold that group (the
  // world size, 8 too, is taken out so that the kernels are what is checked).
  auto j = build_kineto({interference_step(1)}, KBuild{});
  const auto world = j["distributedInfo"];
  j.erase("distributedInfo");
  const auto path = write_trace(j, "redsim_fit_groups.json");
  auto err = error_of([&] { fit_profiles(ideal_star(4, 1e11, 0), {path}, predict); });
  CHECK(err.find(path) != std::string::npos);
  CHECK_THAT(err, Catch::Contains(".args.Group size") && Catch::Contains("at most its 4 ranks") && Catch::Contains("got 8"));
  // A world size of 10^7 (fuzz.py's mutation) on the 8 ranks of the same star.
  j["distributedInfo"] = world;
  j["distributedInfo"]["world_size"] = 10'000'000;
  write_trace(j, "redsim_fit_groups.json");
  err = error_of([&] { fit_profiles(ideal_star(8, 1e11, 0), {path}, predict); });
  CHECK(err.find(path) != std::string::npos);
  CHECK_THAT(err, Catch::Contains("$.distributedInfo.world_size") && Catch::Contains("got 10000000"));
  // One that fits is read.
  j["distributedInfo"]["world_size"] = 8;
  write_trace(j, "redsim_fit_groups.json");
  CHECK(fit_profiles(ideal_star(8, 1e11, 0), {path}, predict).nccl_kernels == 2);
  std::filesystem::remove(path);
}

// The README's example profile (tests/data/profiles/) is this builder's output, no more.
const std::string kExampleProfile = std::string(REDSIM_SOURCE_DIR) + "/tests/data/profiles/synthetic_ddp_rank3.json.gz";
nlohmann::json example_profile() { return build_kineto({interference_step(1), interference_step(2)}, KBuild{}); }

TEST_CASE("(re)writes the example profile: run by hand with its name", "[.generate]") {
  write_gzip(kExampleProfile, example_profile().dump());
}

TEST_CASE("the example profile is the builder's two interference steps", "[trace_tools][calibrate]") {
  CHECK(nlohmann::json::parse(read_text_file_maybe_gzip(kExampleProfile)) == example_profile());
}

TEST_CASE("redsim calibrate --from-profile writes a cluster that simulates, and refuses bad input with exit 2",
          "[trace_tools][calibrate][cli]") {
  TempDir dir;
  const std::string h100 = std::string(REDSIM_SOURCE_DIR) + "/configs/dgx-h100.json";
  auto r = run_redsim("calibrate --from-profile " + quote(kExampleProfile) + " --cluster " + quote(h100) +
                          " --out " + quote(dir / "fitted.json"),
                      dir);
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("$.interference.compute_slowdown") && Catch::Contains("4 gradient buckets"));
  const auto fitted = nlohmann::json::parse(read_file(dir / "fitted.json"));
  const auto given = nlohmann::json::parse(read_file(h100));
  // Kernel against kernel: independent of the cluster's collective model.
  CHECK(fitted["interference"]["compute_slowdown"].get<double>() == Approx(kF).epsilon(1e-6));
  // The built gap less this cluster's own launch cost.
  CHECK(fitted["framework"]["bucket_overhead_us"].get<double>() ==
        Approx(kLaunchUs + kOverheadUs - given["collective_launch_us"].get<double>()).epsilon(1e-6));
  CHECK(fitted["interference"]["collective_slowdown"].get<double>() >= 1.0);

  r = run_redsim("simulate --trace " + quote(std::string(REDSIM_SOURCE_DIR) + "/traces/gpt2-xl.json") + " --cluster " +
                     quote(dir / "fitted.json") + " --strategy bucketed",
                 dir);
  INFO(r.out << r.err);
  CHECK(r.status == 0);

  r = run_redsim("trace import --kineto " + quote(kExampleProfile) + " --out " + quote(dir / "x.json") +
                     " --compute-slowdown 0.5",
                 dir);
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--compute-slowdown"));
  r = run_redsim("trace import --kineto " + quote(kExampleProfile) + " --out " + quote(dir / "x.json") +
                     " --compute-slowdown sm-share",
                 dir);
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--compute-slowdown"));
  r = run_redsim("trace import --kineto " + quote(kExampleProfile) + " --out " + quote(dir / "x.json") + " --sm-count 80",
                 dir);
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--sm-count"));
  r = run_redsim("calibrate --from-profile " + quote(kExampleProfile) + " --out " + quote(dir / "x.json"), dir);
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--cluster"));
  write_file(dir / "bad.json", "{\"traceEvents\": 5}");
  r = run_redsim("calibrate --from-profile " + quote(dir / "bad.json") + " --cluster " + quote(h100) + " --out " +
                     quote(dir / "x.json"),
                 dir);
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("bad.json") && Catch::Contains("$.traceEvents"));
  CHECK_FALSE(std::filesystem::exists(dir / "x.json"));
}

TEST_CASE("DDP's copy back out of its buckets is fitted per gradient tensor", "[trace_tools][calibrate]") {
  // example_step: the last allreduce ends at 1970 us. Here the host enters Optimizer.step 200 us
  // later (kOptimizerOpLeadUs before its first launch, moved to 2175), after copying 50 gradients
  // out of their buckets: 4 us a tensor.
  auto tail_step = [](std::int64_t n, int copies) {
    KStep s = example_step(n, 0);
    s.accumulate_grads = 47;  // and one around each of the 3 allreduce launches: 50 tensors
    s.copies_out = copies;
    for (auto& c : s.compute)
      if (c.phase == KPhase::optimizer) c.launch_us += 175, c.start_us += 175;
    return s;
  };
  const auto file = write_trace(build_kineto({tail_step(1, 50), tail_step(2, 50)}, KBuild{}), "redsim_fit_tail.json");
  auto cluster = ideal_star(8, 1e11, 0);
  const ProfileFit fit = fit_profiles(cluster, {file}, predict);
  const ProfileParam& t = param(fit, "$.framework.copy_out_us_per_tensor");
  CHECK(t.fitted);
  CHECK(t.evidence == 2);
  CHECK(t.after == Approx(200.0 / 50).margin(1e-6));
  CHECK(fit.cluster.framework.copy_out_us_per_tensor == t.after);

  // With bucket_copy the copies' bytes (read and written at memory_GBps) come off first.
  cluster.framework.bucket_copy = true;
  cluster.device.memory_GBps = 1000;
  const double bytes = (262'144 + 6'553'600 + 1000) * 4.0;
  const double copy_us = 2 * bytes / 1000e3;
  CHECK(param(fit_profiles(cluster, {file}, predict), "$.framework.copy_out_us_per_tensor").after ==
        Approx((200 - copy_us) / 50).margin(1e-6));

  // No copy_bucket_to_grad ops (gradient_as_bucket_view=True): nothing to fit, and it says so.
  const auto none = write_trace(build_kineto({tail_step(1, 0)}, KBuild{}), "redsim_fit_no_tail.json");
  const ProfileParam& n = param(fit_profiles(ideal_star(8, 1e11, 0), {none}, predict), "$.framework.copy_out_us_per_tensor");
  CHECK_FALSE(n.fitted);
  CHECK(n.after == 0);
  CHECK_THAT(n.note, Catch::Contains("copy_bucket_to_grad"));
}
