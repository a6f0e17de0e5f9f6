// trace import --kineto: the activations from the profiler's memory events (profile_memory=True).
// Each step's events are laid out here, so the expected bytes are their sum: what the GPU's
// allocator held more when backward began (the host's first autograd op, 398 us into the example
// step) than at its least since the step began.
#include <catch2/catch.hpp>

#include "core/error.h"
#include "kineto_builder.h"
#include "tests/test_support.h"
#include "trace_tools/kineto_import.h"

using namespace redsim;
using namespace redsim::testing;
using nlohmann::json;

namespace {

constexpr std::int64_t kMiBytes = std::int64_t{1} << 20;

// Forward on GPU 0: the previous step's gradients freed (zero_grad), 1 + 2 MiB of outputs, a
// 0.5 MiB temporary freed, 3 MiB more and a 0.25 MiB loss: 5.75 MiB held when backward begins.
// Backward then allocates 4 MiB of gradients and frees the 5.75 MiB, so the next step starts
// where this one did. The CPU's allocator and GPU 1 move too, and must not count.
KStep with_memory(KStep s, bool first) {
  if (first) {  // the parameters and last step's gradients, before the first ProfilerStep span
    s.memory.push_back({-100, 64 * kMiBytes});
    s.memory.push_back({-50, 4 * kMiBytes});
  }
  s.memory.push_back({1, -4 * kMiBytes});
  s.memory.push_back({21, 1 * kMiBytes});
  s.memory.push_back({22, 100 * kMiBytes, 0, -1});  // the host's allocator
  s.memory.push_back({23, 50 * kMiBytes, 1, 1});    // another GPU
  s.memory.push_back({31, 2 * kMiBytes});
  s.memory.push_back({35, -kMiBytes / 2});
  s.memory.push_back({41, 3 * kMiBytes});
  s.memory.push_back({45, kMiBytes / 4});
  s.memory.push_back({399, 4 * kMiBytes});  // backward's gradients: after it began
  s.memory.push_back({700, -(5 * kMiBytes + 3 * kMiBytes / 4)});
  s.memory.push_back({701, -100 * kMiBytes, 0, -1});
  s.memory.push_back({702, -50 * kMiBytes, 1, 1});
  return s;
}

std::vector<KStep> two_steps() { return {with_memory(example_step(3, 0), true), with_memory(example_step(4, 1), false)}; }

}  // namespace

TEST_CASE("import takes the activations from the profiler's memory events", "[trace_tools][import][memory]") {
  const std::int64_t expected = 5 * kMiBytes + 3 * kMiBytes / 4;  // 1 + 2 - 0.5 + 3 + 0.25 MiB
  for (const bool totals : {true, false}) {  // "Total Allocated", or only each event's "Bytes"
    INFO("Total Allocated given: " << totals);
    KBuild o;
    o.total_allocated = totals;
    const KinetoImport imp = import_kineto(build_kineto(two_steps(), o), "t.json", {});
    REQUIRE(imp.activation_bytes.has_value());
    CHECK(*imp.activation_bytes == expected);
    CHECK(imp.trace.activation_bytes() == std::optional<std::int64_t>(expected));
    CHECK(imp.trace.layers.front().name == "forward_pass");
    CHECK(imp.trace.layers.front().activation_bytes == std::optional<std::int64_t>(expected));
    for (std::size_t l = 1; l < imp.trace.layers.size(); ++l) CHECK(imp.trace.layers[l].activation_bytes == 0);
    CHECK(imp.trace.source.find("activation_bytes") != std::string::npos);
    // One step alone gives the same: each step's baseline is its own least.
    KinetoImportOptions one;
    one.step = 4;
    CHECK(import_kineto(build_kineto(two_steps(), o), "t.json", one).activation_bytes == expected);
  }
}

TEST_CASE("without memory events the activations are not in the imported trace", "[trace_tools][import][memory]") {
  const KinetoImport imp = import_kineto(build_kineto({example_step(3, 0)}, KBuild{}), "t.json", {});
  CHECK_FALSE(imp.activation_bytes.has_value());
  CHECK_FALSE(imp.trace.activation_bytes().has_value());
  CHECK(imp.trace.source.find("profile_memory=True") != std::string::npos);
}

TEST_CASE("a malformed memory event is an error naming its JSON path", "[trace_tools][import][memory]") {
  json k = build_kineto(two_steps(), KBuild{});
  auto& events = k["traceEvents"];
  std::size_t i = 0;
  while (events[i].value("name", "") != "[memory]") ++i;
  events[i]["args"]["Bytes"] = "many";
  CHECK_THAT(error_of([&] { import_kineto(k, "t.json", {}); }),
             Catch::StartsWith("t.json: $.traceEvents[" + std::to_string(i) + "].args.Bytes: expected an integer"));
  events[i]["args"]["Bytes"] = 1;
  events[i]["args"]["Total Allocated"] = -1;
  CHECK_THAT(error_of([&] { import_kineto(k, "t.json", {}); }),
             Catch::StartsWith("t.json: $.traceEvents[" + std::to_string(i) + "].args.Total Allocated: "));
  events[i]["args"].erase("Device Type");
  CHECK_THAT(error_of([&] { import_kineto(k, "t.json", {}); }),
             Catch::StartsWith("t.json: $.traceEvents[" + std::to_string(i) + "].args.Device Type: missing"));
}
