// JSON input: round trips, defaults, and one-line errors that name the file and JSON path.
#include <catch2/catch.hpp>

#include "core/cluster_json.h"
#include "core/error.h"
#include "core/json_in.h"
#include "core/knobs_json.h"
#include "core/trace_json.h"
#include "tests/test_support.h"

using namespace redsim;
using testing::error_of;
using nlohmann::json;

namespace {
json tiny_trace() {
  return json::parse(R"({"format":"redsim-trace","version":1,"model":"m","reference_device":"d",
    "batch_size_per_rank":2,"optimizer_s":0.001,
    "layers":[{"name":"a","forward_s":0.001,"backward_s":0.002},{"name":"b","forward_s":0.001,"backward_s":0.002}],
    "params":[{"name":"a.w","numel":10,"dtype":"fp32","layer":"a"},{"name":"a.b","numel":2,"dtype":"fp16","layer":"a"},
              {"name":"b.w","numel":5,"dtype":"bf16","layer":"b","excluded":true}],
    "buffers":[{"name":"a.mean","numel":10,"dtype":"fp32"}]})");
}
}  // namespace

TEST_CASE("a trace round-trips and derives the gradient-ready order", "[core][json]") {
  auto t = trace_from_json(tiny_trace(), "t.json");
  // Backward runs layer b then a; inside a layer, reverse registration order.
  CHECK(t.grad_ready_order == std::vector<std::size_t>{2, 1, 0});
  CHECK(t.reduced_bytes() == 10 * 4 + 2 * 2);
  auto again = trace_from_json(trace_to_json(t), "again.json");
  CHECK(trace_to_json(again) == trace_to_json(t));
}

TEST_CASE("trace errors name file, path and expectation", "[core][json]") {
  auto j = tiny_trace();
  j["params"][1]["numel"] = -3;
  auto msg = error_of([&] { trace_from_json(j, "bad.json"); });
  CHECK(msg == "bad.json: $.params[1].numel: expected a positive integer, got -3");

  j = tiny_trace();
  j["params"][0]["layer"] = "nope";
  CHECK_THAT(error_of([&] { trace_from_json(j, "bad.json"); }), Catch::StartsWith("bad.json: $.params[0].layer: "));

  j = tiny_trace();
  j["grad_ready_order"] = {"a.w", "a.b"};
  CHECK_THAT(error_of([&] { trace_from_json(j, "bad.json"); }),
             Catch::StartsWith("bad.json: $.grad_ready_order: ") && Catch::Contains("b.w"));

  // A shape's dimensions must multiply to numel (10 = 2 x 5), be positive, and be integers.
  j = tiny_trace();
  j["params"][0]["shape"] = {2, 5};
  j["params"][1]["shape"] = json::array({2});
  auto shaped = trace_from_json(j, "ok.json");
  CHECK(shaped.params[0].shape == std::vector<std::int64_t>{2, 5});
  CHECK_FALSE(shaped.params[2].shape.has_value());
  CHECK(trace_to_json(trace_from_json(trace_to_json(shaped), "again.json")) == trace_to_json(shaped));
  j["params"][0]["shape"] = {3, 5};
  CHECK_THAT(error_of([&] { trace_from_json(j, "bad.json"); }),
             Catch::StartsWith("bad.json: $.params[0].shape: expected dimensions whose product is numel (10)"));
  j["params"][0]["shape"] = {10, 0};
  CHECK_THAT(error_of([&] { trace_from_json(j, "bad.json"); }), Catch::StartsWith("bad.json: $.params[0].shape[1]: "));
  j["params"][0]["shape"] = {"2", 5};
  CHECK_THAT(error_of([&] { trace_from_json(j, "bad.json"); }), Catch::StartsWith("bad.json: $.params[0].shape[0]: "));
  j["params"][0]["shape"] = json::array();
  CHECK_THAT(error_of([&] { trace_from_json(j, "bad.json"); }), Catch::Contains("product is numel (10)"));
  j["params"][0]["shape"] = json(std::vector<int>(17, 1));
  CHECK_THAT(error_of([&] { trace_from_json(j, "bad.json"); }), Catch::Contains("at most 16 dimensions"));

  CHECK_THAT(error_of([] { JsonIn::parse_text("{\n \"a\": 1,\n}", "x.json"); }),
             Catch::StartsWith("x.json: $: malformed JSON at line 3"));
}

TEST_CASE("a cluster's reduce rate per element type round-trips and refuses what is not one", "[core][json]") {
  auto c = json::parse(R"({"format":"redsim-cluster","version":1,"name":"c","nodes":1,"devices_per_node":1,
    "device":{"name":"cpu","reduce_GBps":8,"reduce_GBps_by_dtype":{"fp16":0.1}}})");
  auto ok = cluster_from_json(c, "c.json");
  CHECK(ok.device.reduce_GBps_of(DType::fp16) == 0.1);
  CHECK(ok.device.reduce_GBps_of(DType::fp32) == 8);
  CHECK(cluster_to_json(cluster_from_json(cluster_to_json(ok), "again.json")) == cluster_to_json(ok));
  c["device"]["reduce_GBps_by_dtype"] = {{"int8", 1.0}};
  CHECK_THAT(error_of([&] { cluster_from_json(c, "bad.json"); }), Catch::StartsWith("bad.json: $.device.reduce_GBps_by_dtype.int8: unknown member"));
  c["device"]["reduce_GBps_by_dtype"] = {{"fp16", 0}};
  CHECK_THAT(error_of([&] { cluster_from_json(c, "bad.json"); }), Catch::StartsWith("bad.json: $.device.reduce_GBps_by_dtype.fp16: "));
}

TEST_CASE("cluster validation rejects impossible clusters", "[core][json]") {
  auto c = json::parse(R"({"format":"redsim-cluster","version":1,"name":"c","nodes":2,"devices_per_node":8,
    "device":{"name":"g"},"intra_node":{"fabric":"nvswitch","link_bandwidth_GBps":450,"latency_us":2},
    "inter_node":{"topology":"star","nics_per_node":8,"nic_bandwidth_gbps":400,"latency_us":3}})");
  auto ok = cluster_from_json(c, "c.json");
  CHECK(ok.world_size() == 16);
  CHECK(ok.nic_of_local(5) == 5);
  CHECK(cluster_to_json(cluster_from_json(cluster_to_json(ok), "x")) == cluster_to_json(ok));
  // Per-kind launch overheads: absent means the shared figure; present ones round-trip.
  CHECK(ok.launch_us(OpKind::reduce) == 0);
  auto by = c;
  by["collective_launch_us"] = 7;
  by["collective_launch_us_by_kind"] = {{"reduce", 120.5}, {"allgather", 0}};
  const auto with = cluster_from_json(by, "c.json");
  CHECK(with.launch_us(OpKind::reduce) == 120.5);
  CHECK(with.launch_us(OpKind::allgather) == 0);
  CHECK(with.launch_us(OpKind::allreduce) == 7);
  CHECK(cluster_to_json(cluster_from_json(cluster_to_json(with), "x")) == cluster_to_json(with));
  // The host's cost per channel past the first: on top of the kind's launch, and round-trips.
  by["collective_launch_per_channel_us"] = 0.25;
  const auto per = cluster_from_json(by, "c.json");
  CHECK(per.launch_us(OpKind::allreduce, 1) == 7);
  CHECK(per.launch_us(OpKind::allreduce, 24) == Approx(7 + 23 * 0.25));
  CHECK(per.launch_us(OpKind::reduce, 3) == Approx(120.5 + 0.5));
  CHECK(cluster_to_json(cluster_from_json(cluster_to_json(per), "x")) == cluster_to_json(per));

  auto bad = c;
  bad["inter_node"]["nics_per_node"] = 3;
  CHECK_THAT(error_of([&] { cluster_from_json(bad, "c.json"); }),
             Catch::StartsWith("c.json: $.inter_node.nics_per_node: expected a divisor or a multiple of devices_per_node"));
  bad = c;
  bad.erase("inter_node");
  CHECK_THAT(error_of([&] { cluster_from_json(bad, "c.json"); }), Catch::StartsWith("c.json: $.inter_node: missing"));
  bad = c;
  bad["nodez"] = 1;
  CHECK_THAT(error_of([&] { cluster_from_json(bad, "c.json"); }), Catch::StartsWith("c.json: $.nodez: unknown member"));
}

TEST_CASE("knobs round-trip through JSON", "[core][json]") {
  Knobs k;
  k.strategy = "flat";
  k.bucket_cap_bytes = 123456;
  k.channels = 4;
  k.wire_dtype = DType::bf16;
  k.bucket_order = BucketOrder::definition;
  auto back = knobs_from_json(knobs_to_json(k), "k.json", "$", Knobs{});
  CHECK(knobs_to_json(back) == knobs_to_json(k));
}

TEST_CASE("knobs carry NCCL_ALGO and NCCL_PROTO lists, and name a bad one", "[core][json]") {
  auto j = knobs_to_json(Knobs{});
  j["algorithm"] = "^nvls";
  j["protocol"] = "LL,Simple;allreduce:^LL";
  const auto k = knobs_from_json(j, "k.json", "$", Knobs{});
  REQUIRE(k.algorithm_list.has_value());
  CHECK_FALSE(k.algorithm.has_value());
  // Written back in NCCL's spellings, shortest form, the most common list first.
  CHECK(knobs_to_json(k)["algorithm"] == "^NVLS");
  CHECK(knobs_to_json(k)["protocol"] == "^LL128;AllReduce:^LL");
  CHECK(knobs_to_json(knobs_from_json(knobs_to_json(k), "k.json", "$", Knobs{})) == knobs_to_json(k));
  j["algorithm"] = "ring;tree";
  CHECK_THAT(error_of([&] { knobs_from_json(j, "k.json", "$", Knobs{}); }),
             Catch::StartsWith("k.json: $.algorithm: expected an algorithm") &&
                 Catch::Contains("needs a \"function:\" prefix"));
}

TEST_CASE("a cluster names the NCCL release it runs, and nothing that is not one", "[core][json]") {
  auto c = json::parse(R"({"format":"redsim-cluster","version":1,"name":"c","nodes":1,"devices_per_node":8,
    "collective_library":"nccl","device":{"name":"g","compute_capability":9.0},
    "intra_node":{"fabric":"nvswitch","link_bandwidth_GBps":360,"latency_us":0.5,"nvls":true}})");
  CHECK(cluster_from_json(c, "c.json").nccl_version == 21805);  // the modelled release when unsaid
  CHECK_FALSE(cluster_to_json(cluster_from_json(c, "c.json")).contains("nccl_version"));
  c["nccl_version"] = "2.20.5";
  const auto v220 = cluster_from_json(c, "c.json");
  CHECK(v220.nccl_version == 22005);
  CHECK(cluster_to_json(v220)["nccl_version"] == "2.20.5");
  CHECK(cluster_from_json(cluster_to_json(v220), "x").nccl_version == 22005);
  c["nccl_version"] = "2.9";
  CHECK(cluster_from_json(c, "c.json").nccl_version == 20900);
  for (const char* bad : {"3.1.0", "2.x", "2.18.5.1", "2.18.5+cuda12", " 2.18", "2.100", "2..5", "-2.1"}) {
    c["nccl_version"] = bad;
    CHECK_THAT(error_of([&] { cluster_from_json(c, "c.json"); }),
               Catch::StartsWith("c.json: $.nccl_version: expected ") && Catch::Contains("2.MINOR.PATCH"));
  }
  c["nccl_version"] = "";
  CHECK_THAT(error_of([&] { cluster_from_json(c, "c.json"); }), Catch::StartsWith("c.json: $.nccl_version: expected"));
  c["nccl_version"] = 2.18;
  CHECK_THAT(error_of([&] { cluster_from_json(c, "c.json"); }), Catch::StartsWith("c.json: $.nccl_version: expected"));
  c["nccl_version"] = "2.18.5";
  c["collective_library"] = "ideal";
  CHECK_THAT(error_of([&] { cluster_from_json(c, "c.json"); }),
             Catch::StartsWith("c.json: $.nccl_version: expected no nccl_version unless collective_library is \"nccl\""));
}

TEST_CASE("a cluster's network plugin latency: optional, round-tripped, in range", "[core][json]") {
  auto c = cluster_to_json(testing::nccl_nodes(2));
  CHECK(cluster_from_json(c, "c.json").inter.net_plugin_latency_us == 0);  // InfiniBand's: none reported
  CHECK_FALSE(c["inter_node"].contains("net_plugin_latency_us"));
  c["inter_node"]["net_plugin_latency_us"] = 75.0;
  const auto efa = cluster_from_json(c, "c.json");
  CHECK(efa.inter.net_plugin_latency_us == 75.0);
  CHECK(cluster_from_json(cluster_to_json(efa), "x").inter.net_plugin_latency_us == 75.0);
  for (const json& bad : {json(-1), json("75"), json(1e12)}) {
    c["inter_node"]["net_plugin_latency_us"] = bad;
    CHECK_THAT(error_of([&] { cluster_from_json(c, "c.json"); }),
               Catch::StartsWith("c.json: $.inter_node.net_plugin_latency_us: expected"));
  }
}

TEST_CASE("a trace's input bytes: every layer or none, round-tripped, bounded", "[core][json][memory]") {
  auto j = tiny_trace();
  CHECK_FALSE(trace_from_json(j, "t.json").layers[0].input_bytes.has_value());
  j["layers"][0]["input_bytes"] = 4096;
  j["layers"][1]["input_bytes"] = 0;
  const auto t = trace_from_json(j, "t.json");
  CHECK(t.layers[0].input_bytes == std::optional<std::int64_t>(4096));
  CHECK(trace_to_json(trace_from_json(trace_to_json(t), "again.json")) == trace_to_json(t));
  j["layers"][1].erase("input_bytes");
  CHECK_THAT(error_of([&] { trace_from_json(j, "bad.json"); }),
             Catch::StartsWith("bad.json: $.layers[1]: expected input_bytes here too"));
  j["layers"][1]["input_bytes"] = "8";
  CHECK_THAT(error_of([&] { trace_from_json(j, "bad.json"); }), Catch::StartsWith("bad.json: $.layers[1].input_bytes: "));
  j["layers"][0]["input_bytes"] = std::int64_t{1} << 50;
  j["layers"][1]["input_bytes"] = 1;
  CHECK_THAT(error_of([&] { trace_from_json(j, "bad.json"); }),
             Catch::StartsWith("bad.json: $.layers[1].input_bytes: expected input_bytes of at most 2^50"));
}

TEST_CASE("a trace's activation bytes: every layer or none, summed, round-tripped, bounded", "[core][json][memory]") {
  auto j = tiny_trace();
  CHECK_FALSE(trace_from_json(j, "t.json").activation_bytes().has_value());  // not given: unknown, not 0
  j["layers"][0]["activation_bytes"] = 512;
  j["layers"][1]["activation_bytes"] = 0;
  const auto t = trace_from_json(j, "t.json");
  CHECK(t.activation_bytes() == std::optional<std::int64_t>(512));
  CHECK(trace_to_json(trace_from_json(trace_to_json(t), "again.json")) == trace_to_json(t));
  CHECK(trace_to_json(t)["layers"][1]["activation_bytes"] == 0);

  // Given for one layer only would pass for the whole model's: refused, at the layer that differs.
  j["layers"][1].erase("activation_bytes");
  CHECK_THAT(error_of([&] { trace_from_json(j, "bad.json"); }),
             Catch::StartsWith("bad.json: $.layers[1]: expected activation_bytes here too"));
  j = tiny_trace();
  j["layers"][1]["activation_bytes"] = 8;
  CHECK_THAT(error_of([&] { trace_from_json(j, "bad.json"); }),
             Catch::StartsWith("bad.json: $.layers[1].activation_bytes: expected no activation_bytes"));
  j["layers"][0]["activation_bytes"] = -1;
  CHECK_THAT(error_of([&] { trace_from_json(j, "bad.json"); }),
             Catch::StartsWith("bad.json: $.layers[0].activation_bytes: expected a non-negative integer"));
  j["layers"][0]["activation_bytes"] = 1.5;
  CHECK_THAT(error_of([&] { trace_from_json(j, "bad.json"); }), Catch::StartsWith("bad.json: $.layers[0].activation_bytes: "));
  // 2^49 + 2^49 is 2^50, the limit; one byte more is refused where the sum passes it.
  j["layers"][0]["activation_bytes"] = std::int64_t{1} << 49;
  j["layers"][1]["activation_bytes"] = std::int64_t{1} << 49;
  CHECK(trace_from_json(j, "ok.json").activation_bytes() == std::optional<std::int64_t>(std::int64_t{1} << 50));
  j["layers"][1]["activation_bytes"] = (std::int64_t{1} << 49) + 1;
  // The message gives the total the layer brings them to: 2^50 + 1 = 1125899906842625.
  CHECK_THAT(error_of([&] { trace_from_json(j, "bad.json"); }),
             Catch::StartsWith("bad.json: $.layers[1].activation_bytes: expected activation_bytes of at most 2^50") &&
                 Catch::Contains("brings them to 1125899906842625)"));
}

TEST_CASE("a parameter's gradient tensors and the copy-out's cost per tensor round-trip, bounded", "[core][json]") {
  auto j = tiny_trace();
  j["params"][0]["tensors"] = 40;
  auto t = trace_from_json(j, "t.json");
  CHECK(t.params[0].tensors == 40);
  CHECK(t.params[1].tensors == 1);  // the default: a real parameter is one tensor
  CHECK(trace_to_json(trace_from_json(trace_to_json(t), "again.json")) == trace_to_json(t));
  CHECK_FALSE(trace_to_json(t)["params"][1].contains("tensors"));  // written only when not 1
  for (const json& bad : {json(0), json(1.5), json("2"), json(1'000'001)}) {
    INFO(bad.dump());
    j["params"][0]["tensors"] = bad;
    CHECK_THAT(error_of([&] { trace_from_json(j, "bad.json"); }), Catch::StartsWith("bad.json: $.params[0].tensors: "));
  }

  auto c = json::parse(R"({"format":"redsim-cluster","version":1,"name":"c","nodes":1,"devices_per_node":1,
    "device":{"name":"g"},"framework":{"copy_out_us_per_tensor":93.8}})");
  auto ok = cluster_from_json(c, "c.json");
  CHECK(ok.framework.copy_out_us_per_tensor == 93.8);
  CHECK(cluster_to_json(cluster_from_json(cluster_to_json(ok), "again.json")) == cluster_to_json(ok));
  for (const json& bad : {json(-1), json("5"), json(1e4 + 1)}) {
    INFO(bad.dump());
    c["framework"]["copy_out_us_per_tensor"] = bad;
    CHECK_THAT(error_of([&] { cluster_from_json(c, "bad.json"); }),
               Catch::StartsWith("bad.json: $.framework.copy_out_us_per_tensor: "));
  }
}

TEST_CASE("a cluster names its hosts' CPU vendor, Intel unless said", "[core][json]") {
  auto c = json::parse(R"({"format":"redsim-cluster","version":1,"name":"c","nodes":2,"devices_per_node":1,
    "collective_library":"nccl","device":{"name":"g","compute_capability":8.0},
    "inter_node":{"topology":"star","nics_per_node":1,"nic_bandwidth_gbps":200,"latency_us":1}})");
  CHECK(cluster_from_json(c, "c.json").host_cpu_vendor == CpuVendor::intel);
  CHECK_FALSE(cluster_to_json(cluster_from_json(c, "c.json")).contains("host_cpu_vendor"));
  c["host_cpu_vendor"] = "amd";
  const auto amd = cluster_from_json(c, "c.json");
  CHECK(amd.host_cpu_vendor == CpuVendor::amd);
  CHECK(cluster_from_json(cluster_to_json(amd), "x").host_cpu_vendor == CpuVendor::amd);
  c["host_cpu_vendor"] = "arm";
  CHECK(cluster_from_json(c, "c.json").host_cpu_vendor == CpuVendor::arm);
  c["host_cpu_vendor"] = "AMD";  // the vendor names are lower case, as the other choices are
  CHECK_THROWS_AS(cluster_from_json(c, "c.json"), InputError);
}
