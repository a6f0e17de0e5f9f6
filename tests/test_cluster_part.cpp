// --layout (simulate, tune, run, validate): the part of a cluster file a profiled or measured run used,
// as the first N ranks or NODESxDEVICES; anything else is bad input naming --layout.
#include <catch2/catch.hpp>
#include <string>

#include "collectives/cluster_subset.h"
#include "core/cluster_json.h"
#include "core/error.h"

using namespace redsim;

namespace {
ClusterSpec preset(const std::string& name) { return load_cluster(std::string(REDSIM_SOURCE_DIR) + "/configs/" + name); }

std::string layout_error(const ClusterSpec& c, const std::string& layout) {
  try {
    (void)cluster_part(c, layout);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("a layout takes the first N ranks or NODESxDEVICES of a cluster", "[cluster][layout]") {
  const auto one = preset("dgx-a100.json");  // 1 node x 8 devices, 8 NICs
  const auto two = preset("dgx-a100-x2.json");  // 2 nodes x 8 devices, 8 NICs each

  CHECK(cluster_part(one, "").world_size() == 8);
  CHECK(cluster_part(one, "8").world_size() == 8);
  for (const char* l : {"2", "1x2"}) {
    const auto c = cluster_part(one, l);
    CHECK(c.nodes == 1);
    CHECK(c.devices_per_node == 2);
    CHECK(c.inter.nics_per_node == 2);  // the NICs that serve two of eight devices: 8 x 2 / 8
  }
  const auto nodes = cluster_part(two, "16");
  CHECK(nodes.nodes == 2);
  CHECK(nodes.devices_per_node == 8);
  const auto part = cluster_part(two, "2x4");
  CHECK(part.nodes == 2);
  CHECK(part.devices_per_node == 4);
  CHECK(part.inter.nics_per_node == 4);
  CHECK(cluster_part(two, "1x8").world_size() == 8);
}

TEST_CASE("a --layout the cluster cannot hold, or cannot be read, names --layout", "[cluster][layout]") {
  const auto one = preset("dgx-a100.json");
  const auto two = preset("dgx-a100-x2.json");
  for (const char* l : {"0", "x2", "1x", "1x0", "abc", "1x2x3", "-1", "+2", " 2", "2 ", "1X2", "99999999"}) {
    INFO(l);
    CHECK_THAT(layout_error(one, l), Catch::StartsWith("--layout: expected N (the cluster's first N ranks) or NODESxDEVICES"));
  }
  CHECK_THAT(layout_error(one, "9"), Catch::StartsWith("--layout: expected 1 to 8"));
  CHECK_THAT(layout_error(one, "1x9"), Catch::StartsWith("--layout: expected a layout within the cluster's 1 node(s) x 8"));
  CHECK_THAT(layout_error(one, "2x1"), Catch::StartsWith("--layout: expected a layout within"));
  CHECK_THAT(layout_error(two, "12"), Catch::StartsWith("--layout: expected at most one node's 8 devices or a multiple of 8"));
}
