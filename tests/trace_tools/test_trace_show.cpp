// redsim trace show: its DDP bucket preview is ddp_buckets(), its histogram counts are the
// gradient-ready times binned by hand, its totals are sums over the trace.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>

#include "core/trace_json.h"
#include "core/units.h"
#include "strategies/ddp_bucketing.h"
#include "tool_runner.h"
#include "trace_tools/grad_ready.h"

using namespace redsim;
using namespace redsim::testing;
using nlohmann::json;

namespace {

std::string source_file(const std::string& rel) { return std::string(REDSIM_SOURCE_DIR) + "/" + rel; }

// A trace whose gradient-ready order differs from the derived one, with a frozen parameter,
// three dtypes, a parameter-less layer and a zero-time layer.
json mixed_trace() {
  return json::parse(R"({"format":"redsim-trace","version":1,"model":"mixed","reference_device":"d",
    "batch_size_per_rank":4,"optimizer_s":0.002,
    "layers":[{"name":"emb","forward_s":0.0005,"backward_s":0.004},
              {"name":"core","forward_s":0.003,"backward_s":0.006},
              {"name":"norm","forward_s":0.0005,"backward_s":0},
              {"name":"head","forward_s":0.002,"backward_s":0.003}],
    "params":[{"name":"emb.w","numel":300000,"dtype":"fp32","layer":"emb"},
              {"name":"emb.frozen","numel":1000,"dtype":"fp32","layer":"emb","trainable":false},
              {"name":"norm.w","numel":512,"dtype":"bf16","layer":"norm"},
              {"name":"norm.b","numel":512,"dtype":"bf16","layer":"norm"},
              {"name":"head.w","numel":700000,"dtype":"fp16","layer":"head"},
              {"name":"head.b","numel":10,"dtype":"fp32","layer":"head"}],
    "grad_ready_order":["head.w","head.b","norm.b","norm.w","emb.w"],
    "buffers":[{"name":"n","numel":8,"dtype":"int64"}]})");
}

json show_json(const std::string& trace_file, const std::string& extra, const TempDir& dir,
               std::string* text = nullptr) {
  const std::string out = dir / "summary.json";
  auto r = run_redsim("trace show " + quote(trace_file) + " " + extra + " --json " + quote(out), dir);
  INFO(r.err);
  REQUIRE(r.status == 0);
  if (text != nullptr) *text = r.out;
  return json::parse(read_file(out));
}

void check_buckets_match(const ModelTrace& t, const json& s, const Knobs& k) {
  const auto expected = ddp_buckets(t, k);
  const auto& got = s["ddp_buckets"]["buckets"];
  REQUIRE(got.size() == expected.size());
  CHECK(s["ddp_buckets"]["bucket_cap_bytes"] == k.bucket_cap_bytes);
  CHECK(s["ddp_buckets"]["first_bucket_cap_bytes"] == k.first_bucket_cap_bytes);
  for (std::size_t b = 0; b < expected.size(); ++b) {
    INFO("bucket " << b);
    CHECK(got[b]["params"].get<std::vector<std::size_t>>() == expected[b].params);
    CHECK(got[b]["bytes"] == expected[b].bytes);
    CHECK(got[b]["numel"] == expected[b].numel);
    CHECK(got[b]["dtype"] == std::string(dtype_name(expected[b].dtype)));
    CHECK(got[b]["first"] == t.params[expected[b].params.front()].name);
    CHECK(got[b]["last"] == t.params[expected[b].params.back()].name);
  }
}

// The histogram from first principles: backward runs the layers last to first, back to back;
// a gradient is ready when its layer's backward ends.
std::vector<std::pair<std::size_t, std::int64_t>> direct_histogram(const ModelTrace& t, std::size_t bins) {
  std::vector<double> end(t.layers.size());
  double clock = 0;
  for (std::size_t l = t.layers.size(); l-- > 0;) end[l] = clock += t.layers[l].backward_s;
  const double total = clock;
  std::vector<std::pair<std::size_t, std::int64_t>> h(bins);
  for (std::size_t i = 0; i < t.params.size(); ++i) {
    if (!t.params[i].trainable) continue;  // frozen: no gradient
    const double ready = end[t.params[i].layer];
    std::size_t b = total > 0 ? static_cast<std::size_t>(std::floor(ready / total * static_cast<double>(bins))) : 0;
    if (b >= bins) b = bins - 1;
    h[b].first += 1;
    h[b].second += t.params[i].bytes();
  }
  return h;
}

}  // namespace

TEST_CASE("trace show previews exactly the buckets ddp_buckets forms", "[trace_tools][show]") {
  TempDir dir;
  const std::string file = source_file("traces/resnet50.json");
  const ModelTrace t = load_trace(file);
  struct Case {
    double bucket_mb, first_mb;
    const char* order;
  };
  for (const Case c :
       {Case{25, 1, "execution"}, Case{1, 1, "definition"}, Case{100, 5, "execution"}, Case{0.5, 0.25, "definition"}}) {
    Knobs k;
    k.bucket_cap_bytes = std::llround(c.bucket_mb * kMiB);
    k.first_bucket_cap_bytes = std::llround(c.first_mb * kMiB);
    k.bucket_order = std::string(c.order) == "execution" ? BucketOrder::execution : BucketOrder::definition;
    std::string text;
    char args[128];
    std::snprintf(args, sizeof args, "--bucket-mb %g --first-bucket-mb %g --bucket-order %s", c.bucket_mb, c.first_mb,
                  c.order);
    const json s = show_json(file, args, dir, &text);
    INFO(args);
    check_buckets_match(t, s, k);
    const auto n = ddp_buckets(t, k).size();
    CHECK_THAT(text,
               Catch::Contains(std::string(c.order) + " order, in launch order): " + std::to_string(n) + " buckets"));
    if (n > 16) CHECK_THAT(text, Catch::Contains("more buckets)"));
  }
  // The mixed-dtype trace: one open bucket per dtype, and the frozen parameter in none.
  write_file(dir / "mixed.json", mixed_trace().dump());
  const ModelTrace m = load_trace(dir / "mixed.json");
  Knobs k;
  k.bucket_cap_bytes = 1'000'000;
  k.first_bucket_cap_bytes = 1'000;
  std::string text;
  const json s =
      show_json(dir / "mixed.json", "--bucket-mb 0.95367431640625 --first-bucket-mb 0.00095367431640625", dir, &text);
  check_buckets_match(m, s, k);
  for (const auto& b : s["ddp_buckets"]["buckets"])
    for (auto p : b["params"]) CHECK(p != 1);  // emb.frozen
}

TEST_CASE("trace show's histogram counts match the gradient-ready times computed directly", "[trace_tools][show]") {
  TempDir dir;
  write_file(dir / "mixed.json", mixed_trace().dump());
  for (const std::string& file : {source_file("traces/resnet50.json"), source_file("traces/bert-large.json"),
                                  dir / "mixed.json", source_file("tests/data/tiny_trace.json")}) {
    const ModelTrace t = load_trace(file);
    for (std::size_t bins : {20u, 7u, 1u}) {
      INFO(file << ", " << bins << " bins");
      const json s = show_json(file, "--bins " + std::to_string(bins), dir);
      const auto& h = s["grad_ready_histogram"]["bins"];
      const auto expected = direct_histogram(t, bins);
      REQUIRE(h.size() == bins);
      std::size_t tensors = 0;
      for (std::size_t b = 0; b < bins; ++b) {
        CHECK(h[b]["tensors"] == expected[b].first);
        CHECK(h[b]["bytes"] == expected[b].second);
        tensors += h[b]["tensors"].get<std::size_t>();
      }
      CHECK(tensors == t.grad_ready_order.size());
      double total = 0;
      for (const auto& l : t.layers) total += l.backward_s;
      CHECK(s["grad_ready_histogram"]["backward_s"].get<double>() == Approx(total).epsilon(1e-12));
      CHECK(h[bins - 1]["end_s"].get<double>() == Approx(total).epsilon(1e-12));
    }
  }
  // By hand for the mixed trace: backward runs head (3 ms), norm (0), core (6 ms), emb (4 ms):
  // head.* ready at 3 ms, norm.* at 3 ms, emb.w at 13 ms. Over 13 ms in 13 bins: bin 3 holds
  // head.w, head.b, norm.w, norm.b; bin 12 (the last, which holds its end) holds emb.w.
  const json s = show_json(dir / "mixed.json", "--bins 13", dir);
  const auto& h = s["grad_ready_histogram"]["bins"];
  for (std::size_t b = 0; b < 13; ++b) {
    INFO("bin " << b);
    CHECK(h[b]["tensors"] == (b == 3 ? 4 : b == 12 ? 1 : 0));
  }
  CHECK(h[3]["bytes"] == 700000 * 2 + 10 * 4 + 512 * 2 * 2);
  CHECK(h[12]["bytes"] == 300000 * 4);
  // The same numbers through the library function the command uses.
  const auto ready = grad_ready_times(load_trace(dir / "mixed.json"));
  REQUIRE(ready.size() == 5);
  CHECK(ready[0].ready_s == Approx(0.003));
  CHECK(ready[4].ready_s == Approx(0.013));
}

TEST_CASE("trace show totals: parameters and bytes by dtype, compute split, top layers", "[trace_tools][show]") {
  TempDir dir;
  write_file(dir / "mixed.json", mixed_trace().dump());
  std::string text;
  const json s = show_json(dir / "mixed.json", "--top 2", dir, &text);
  const auto& p = s["params"];
  CHECK(p["all"]["tensors"] == 6);
  CHECK(p["all"]["numel"] == 300000 + 1000 + 512 + 512 + 700000 + 10);
  CHECK(p["by_dtype"]["fp32"]["bytes"] == (300000 + 1000 + 10) * 4);
  CHECK(p["by_dtype"]["fp16"]["bytes"] == 700000 * 2);
  CHECK(p["by_dtype"]["bf16"]["tensors"] == 2);
  CHECK(p["frozen"]["tensors"] == 1);
  CHECK(p["reduced"]["bytes"] == 300000 * 4 + 512 * 2 * 2 + 700000 * 2 + 10 * 4);
  CHECK(s["buffers"]["all"]["bytes"] == 64);
  CHECK(s["compute"]["forward_s"].get<double>() == Approx(0.006));
  CHECK(s["compute"]["backward_s"].get<double>() == Approx(0.013));
  CHECK(s["compute"]["optimizer_s"].get<double>() == Approx(0.002));
  const auto& top = s["compute"]["top_layers"];
  REQUIRE(top.size() == 2);
  CHECK(top[0]["layer"] == "core");  // 9 ms
  CHECK(top[1]["layer"] == "head");  // 5 ms; emb 4.5 ms
  CHECK_THAT(text, Catch::Contains("forward        6.000 ms") && Catch::Contains("top 2 layers"));
  // Bad knobs are input errors.
  auto r = run_redsim("trace show " + quote(dir / "mixed.json") + " --bucket-mb 0", dir);
  CHECK(r.status == 2);
  CHECK(r.err == "redsim: error: --bucket-mb: expected a positive size in MiB (at most 1 TiB), got 0\n");
  r = run_redsim("trace show " + quote(dir / "mixed.json") + " --bucket-order random", dir);
  CHECK(r.status == 2);
}

TEST_CASE("trace show counts the tensors a synthetic parameter stands for", "[trace_tools][show]") {
  TempDir dir;
  json t = mixed_trace();
  t["params"][4]["tensors"] = 40;  // head.w (fp16) stands for 40 gradient tensors
  write_file(dir / "standing.json", t.dump());
  const json s = show_json(dir / "standing.json", "", dir, nullptr);
  const auto& p = s["params"];
  CHECK(p["all"]["tensors"] == 6 - 1 + 40);
  CHECK(p["by_dtype"]["fp16"]["tensors"] == 40);
  CHECK(p["reduced"]["tensors"] == 5 - 1 + 40);  // all but the frozen one
  CHECK(p["all"]["numel"] == 300000 + 1000 + 512 + 512 + 700000 + 10);  // elements as they were
}
