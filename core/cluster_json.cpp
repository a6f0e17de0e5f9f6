#include "core/cluster_json.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <optional>
#include <string_view>

#include "core/error.h"
#include "core/json_in.h"

namespace redsim {
namespace {

// Sane ranges (configs/README.md, "Limits"): a bandwidth of 1e300 makes SimGrid abort, and a
// latency of hours is a typo, not a network.
constexpr double kMinBandwidth = 1e-6;   // GB/s or Gb/s: 1 kB/s
constexpr double kMaxBandwidth = 1e6;    // GB/s or Gb/s: 1 PB/s, far above any link
constexpr double kMaxLatencyUs = 1e6;    // 1 s
constexpr double kMinSpeedup = 1e-3, kMaxSpeedup = 1e3;
constexpr std::int64_t kMaxSmCount = 4096;  // far above any GPU (H100: 132)
constexpr double kMaxInterferenceSlowdown = 10;  // 10x: far beyond the ~2x reported for GEMMs next to NCCL

double in_range(const JsonIn& v, double lo, double hi, bool zero_ok, const char* what) {
  const double x = v.number();
  if ((zero_ok && x == 0) || (x >= lo && x <= hi)) return x;
  char range[96];
  std::snprintf(range, sizeof range, " from %g to %g", lo, hi);
  v.fail(std::string(zero_ok ? "0 or " : "") + what + range);
}

double bandwidth(const JsonIn& v) { return in_range(v, kMinBandwidth, kMaxBandwidth, false, "a bandwidth"); }
double latency_us(const JsonIn& v) { return in_range(v, 0, kMaxLatencyUs, false, "a latency in microseconds"); }
// Optional members whose 0 (or absence) means "not given".
double optional_bandwidth(const JsonIn& parent, std::string_view key) {
  auto m = parent.find(key);
  return m ? in_range(*m, kMinBandwidth, kMaxBandwidth, true, "a bandwidth") : 0.0;
}
double optional_latency_us(const JsonIn& parent, std::string_view key) {
  auto m = parent.find(key);
  return m ? latency_us(*m) : 0.0;
}

int small_positive_int(const JsonIn& v, std::int64_t max) {
  auto n = v.positive_integer();
  if (n > max) v.fail("a positive integer at most " + std::to_string(max));
  return static_cast<int>(n);
}

void read_device(const JsonIn& d, ClusterSpec& c) {
  d.allow_only({"name", "aliases", "compute_speedup", "speedup_reference", "memory_GB", "reduce_GBps",
                "reduce_GBps_by_dtype", "compute_capability", "pcie_GBps", "memory_GBps", "copy_GBps",
                "fresh_copy_GBps", "sm_count"});
  c.device.name = d.at("name").nonempty_string();
  if (auto aliases = d.find("aliases"))
    for (const auto& a : aliases->items()) c.device.aliases.push_back(a.nonempty_string());
  if (auto s = d.find("compute_speedup"))
    c.device.compute_speedup = in_range(*s, kMinSpeedup, kMaxSpeedup, false, "a speed-up");
  if (auto ref = d.find("speedup_reference")) c.device.speedup_reference = ref->nonempty_string();
  // A factor with no stated reference is the silent conversion that made CPU traces look like
  // H100 ones: say which device the speed-up is measured against.
  if (c.device.compute_speedup != 1.0 && c.device.speedup_reference.empty())
    d.at("compute_speedup").fail("a speedup_reference next to a compute_speedup other than 1 (the device the "
                                 "speed-up is relative to, e.g. \"A100-SXM4-80GB\", or \"*\" for any trace)");
  if (auto m = d.find("memory_GB")) c.device.memory_GB = in_range(*m, 0, 1e9, false, "a memory size in GB");
  c.device.reduce_GBps = optional_bandwidth(d, "reduce_GBps");
  if (auto by = d.find("reduce_GBps_by_dtype")) {
    by->expect_object();
    by->allow_only({"fp16", "bf16", "fp32", "fp64"});
    for (DType t : {DType::fp16, DType::bf16, DType::fp32, DType::fp64})
      if (auto v = by->find(dtype_name(t))) c.device.reduce_GBps_by_dtype[t] = bandwidth(*v);
  }
  if (auto cc = d.find("compute_capability")) {
    c.device.compute_capability = cc->nonnegative_number();
    if (c.device.compute_capability > 0 && (c.device.compute_capability < 3 || c.device.compute_capability >= 20))
      cc->fail("a CUDA compute capability such as 7.0, 8.0 or 9.0 (0 for no GPU)");
  }
  if (auto n = d.find("sm_count")) c.device.sm_count = small_positive_int(*n, kMaxSmCount);
  c.device.pcie_GBps = optional_bandwidth(d, "pcie_GBps");
  c.device.memory_GBps = optional_bandwidth(d, "memory_GBps");
  c.device.copy_GBps = optional_bandwidth(d, "copy_GBps");
  c.device.fresh_copy_GBps = optional_bandwidth(d, "fresh_copy_GBps");
}

void read_framework(const JsonIn& f, ClusterSpec& c) {
  f.expect_object();
  f.allow_only({"bucket_overhead_us", "bucket_copy", "copy_out_us_per_tensor"});
  c.framework.bucket_overhead_us = f.nonnegative_number_or("bucket_overhead_us", 0.0);
  if (c.framework.bucket_overhead_us > 1e6) f.at("bucket_overhead_us").fail("at most 1e6 us (one second) per bucket");
  c.framework.bucket_copy = f.boolean_or("bucket_copy", false);
  c.framework.copy_out_us_per_tensor = f.nonnegative_number_or("copy_out_us_per_tensor", 0.0);
  if (c.framework.copy_out_us_per_tensor > 1e4)
    f.at("copy_out_us_per_tensor").fail("at most 1e4 us (10 ms) per gradient tensor");
  if (c.framework.bucket_copy && !(c.bucket_copy_GBps() > 0))
    f.at("bucket_copy").fail(
        "$.device.copy_GBps or $.device.memory_GBps > 0 (the copies run at the device's copy bandwidth), or false");
}

void read_interference(const JsonIn& f, ClusterSpec& c) {
  f.expect_object();
  f.allow_only({"compute_slowdown", "collective_slowdown", "collective_latency_us"});
  auto factor = [&](const char* key) {
    auto v = f.find(key);
    return v ? in_range(*v, 1.0, kMaxInterferenceSlowdown, false, "a slowdown factor (1 = none)") : 1.0;
  };
  if (auto v = f.find("compute_slowdown"); v && v->raw().is_string()) {
    if (v->string() != "sm_share") v->fail("a slowdown factor (1 = none) or \"sm_share\"");
    if (c.device.sm_count <= 0) v->fail("a slowdown factor: \"sm_share\" needs $.device.sm_count (the device's SMs)");
    c.interference.compute_slowdown_sm_share = true;
  } else {
    c.interference.compute_slowdown = factor("compute_slowdown");
  }
  c.interference.collective_slowdown = factor("collective_slowdown");
  if (auto v = f.find("collective_latency_us")) c.interference.collective_latency_us = latency_us(*v);
}

// The link matrix of an "nvlink" fabric: devices_per_node rows of non-negative link counts,
// symmetric, zero on the diagonal.
std::vector<std::vector<int>> read_nvlink_matrix(const JsonIn& m, int devices) {
  const auto rows = m.items();
  if (static_cast<int>(rows.size()) != devices) m.fail("an array of " + std::to_string(devices) + " rows (devices_per_node)");
  std::vector<std::vector<JsonIn>> cells;
  std::vector<std::vector<int>> out;
  for (const auto& row : rows) {
    cells.push_back(row.items());
    if (static_cast<int>(cells.back().size()) != devices) row.fail("a row of " + std::to_string(devices) + " link counts");
    std::vector<int> r;
    for (const auto& cell : cells.back()) {
      const auto v = cell.nonnegative_integer();
      if (v > 64) cell.fail("a link count from 0 to 64");
      r.push_back(static_cast<int>(v));
    }
    out.push_back(std::move(r));
  }
  for (std::size_t i = 0; i < out.size(); ++i)
    for (std::size_t j = 0; j < out.size(); ++j) {
      if (i == j && out[i][j] != 0) cells[i][j].fail("0 (a device has no NVLink to itself)");
      if (out[i][j] != out[j][i])
        cells[i][j].fail("the same count as [" + std::to_string(j) + "][" + std::to_string(i) + "] (links are symmetric)");
    }
  return out;
}

void read_intra(const JsonIn& in, ClusterSpec& c) {
  in.allow_only({"fabric", "link_bandwidth_GBps", "latency_us", "nvls", "p2p", "devices_per_pcie_switch",
                 "pcie_uplink_GBps", "sockets", "socket_link_GBps", "nvlinks"});
  const auto fabric = in.at("fabric").one_of({"nvswitch", "pcie", "nvlink"});
  c.intra.fabric = fabric == "pcie" ? IntraFabric::pcie : fabric == "nvlink" ? IntraFabric::nvlink : IntraFabric::nvswitch;
  c.intra.link_bandwidth_GBps = bandwidth(in.at("link_bandwidth_GBps"));
  c.intra.latency_us = latency_us(in.at("latency_us"));
  auto only_on = [&](std::string_view key, IntraFabric f, const char* name) {
    if (auto m = in.find(key); m && c.intra.fabric != f) m->fail(std::string("no such member for a ") + std::string(fabric) + " fabric (" + name + " only)");
  };
  only_on("nvls", IntraFabric::nvswitch, "nvswitch");
  only_on("p2p", IntraFabric::pcie, "pcie");
  only_on("pcie_uplink_GBps", IntraFabric::pcie, "pcie");
  only_on("nvlinks", IntraFabric::nvlink, "nvlink");
  if (auto v = in.find("nvls")) {
    c.intra.nvls = v->boolean();
    if (c.intra.nvls && c.device.compute_capability < 9.0)
      v->fail("false: NVLS needs NVSwitch generation 3 and compute capability 9.0 or newer (device.compute_capability is " +
              std::to_string(c.device.compute_capability).substr(0, 3) + ")");
    if (c.intra.nvls && c.devices_per_node <= 2) v->fail("false: NCCL uses NVLS only with more than 2 devices per node");
  }
  c.intra.p2p = in.boolean_or("p2p", true);
  if (auto dps = in.find("devices_per_pcie_switch")) {
    c.intra.devices_per_pcie_switch = small_positive_int(*dps, c.devices_per_node);
    if (c.devices_per_node % c.intra.devices_per_pcie_switch != 0)
      dps->fail("a divisor of devices_per_node (" + std::to_string(c.devices_per_node) + ")");
  }
  c.intra.pcie_uplink_GBps = optional_bandwidth(in, "pcie_uplink_GBps");
  if (auto s = in.find("sockets")) {
    c.intra.sockets = small_positive_int(*s, 16);
    if (c.pcie_switches_per_node() % c.intra.sockets != 0)
      s->fail("a divisor of the PCIe switch count (" + std::to_string(c.pcie_switches_per_node()) + ")");
  }
  c.intra.socket_link_GBps = optional_bandwidth(in, "socket_link_GBps");
  if (c.intra.fabric == IntraFabric::nvlink) c.intra.nvlinks = read_nvlink_matrix(in.at("nvlinks"), c.devices_per_node);
}

void read_inter(const JsonIn& ex, ClusterSpec& c) {
  ex.allow_only({"topology", "nics_per_node", "nic_bandwidth_gbps", "latency_us", "nodes_per_leaf", "oversubscription",
                 "spine_latency_us", "net_plugin_latency_us"});
  c.inter.topology = ex.at("topology").one_of({"star", "fat-tree"}) == "fat-tree" ? InterTopology::fat_tree : InterTopology::star;
  auto nics = ex.at("nics_per_node");
  c.inter.nics_per_node = small_positive_int(nics, 1024);
  const int d = c.devices_per_node, k = c.inter.nics_per_node, sw = c.pcie_switches_per_node();
  if (d % k != 0 && k % d != 0)
    nics.fail("a divisor or a multiple of devices_per_node (" + std::to_string(d) + "), so that devices share NICs evenly");
  // NICs sit on the devices' PCIe switches (GPU-NIC affinity): spread evenly over them.
  if (sw % k != 0 && k % sw != 0)
    nics.fail("a count the " + std::to_string(sw) + " PCIe switches per node can host evenly (a divisor or multiple of " +
              std::to_string(sw) + ")");
  c.inter.nic_bandwidth_gbps = bandwidth(ex.at("nic_bandwidth_gbps"));
  c.inter.latency_us = latency_us(ex.at("latency_us"));
  c.inter.net_plugin_latency_us = optional_latency_us(ex, "net_plugin_latency_us");
  if (c.inter.topology == InterTopology::fat_tree) {
    c.inter.nodes_per_leaf = small_positive_int(ex.at("nodes_per_leaf"), c.nodes);
    c.inter.oversubscription = ex.positive_number_or("oversubscription", 1.0);
    if (c.inter.oversubscription < 1.0 || c.inter.oversubscription > 1e3)
      ex.at("oversubscription").fail("a ratio from 1 to 1000 (downlink:uplink)");
    c.inter.spine_latency_us = optional_latency_us(ex, "spine_latency_us");
  } else {
    for (auto key : {"nodes_per_leaf", "oversubscription", "spine_latency_us"})
      if (auto m = ex.find(key)) m->fail("no such member for a star topology (use \"fat-tree\")");
  }
}

}  // namespace

// "2.MINOR" or "2.MINOR.PATCH", as NCCL prints its version ("NCCL version 2.18.5+cuda12.2": the
// part before '+').
std::optional<int> parse_nccl_version(const std::string& s) {
  int major = -1, minor = -1, patch = 0, used = 0;
  const auto dots = std::count(s.begin(), s.end(), '.');
  const bool parsed = dots == 1 ? std::sscanf(s.c_str(), "%3d.%3d%n", &major, &minor, &used) == 2
                                : dots == 2 && std::sscanf(s.c_str(), "%3d.%3d.%3d%n", &major, &minor, &patch, &used) == 3;
  if (!parsed || used != static_cast<int>(s.size()) || s.find_first_not_of("0123456789.") != std::string::npos ||
      major != 2 || minor < 0 || minor > 99 || patch < 0 || patch > 99)
    return std::nullopt;
  return major * 10000 + minor * 100 + patch;
}

int nccl_version_from_json(const JsonIn& v) {
  const auto version = parse_nccl_version(v.nonempty_string());
  if (!version) v.fail(kNcclVersionExpected);
  return *version;
}

std::string nccl_version_name(int version) {
  return std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." + std::to_string(version % 100);
}

ClusterSpec cluster_from_json(const json& root, const std::string& file) {
  JsonIn j(root, "$", file);
  j.allow_only({"$schema", "format", "version", "name", "source", "nodes", "devices_per_node", "device", "intra_node",
                "inter_node", "collective_library", "nccl_version", "collective_launch_us", "collective_launch_us_by_kind",
                "collective_launch_per_channel_us", "host_cpu_vendor",
                "framework", "interference"});
  if (j.at("format").string() != "redsim-cluster") j.at("format").fail("\"redsim-cluster\"");
  if (j.at("version").integer() != 1) j.at("version").fail("1");

  ClusterSpec c;
  c.name = j.at("name").nonempty_string();
  c.source = j.string_or("source", "");
  c.nodes = small_positive_int(j.at("nodes"), 1 << 20);
  c.devices_per_node = small_positive_int(j.at("devices_per_node"), 1024);
  if (static_cast<std::int64_t>(c.nodes) * c.devices_per_node > (1 << 22))
    j.at("nodes").fail("at most 4,194,304 devices in all");
  if (auto lib = j.find("collective_library"))
    c.library = lib->one_of({"ideal", "nccl"}) == "nccl" ? CollectiveLibrary::nccl : CollectiveLibrary::ideal;
  if (auto v = j.find("nccl_version")) {
    if (c.library != CollectiveLibrary::nccl) v->fail("no nccl_version unless collective_library is \"nccl\"");
    c.nccl_version = nccl_version_from_json(*v);
  }
  if (auto v = j.find("host_cpu_vendor")) {
    const auto vendor = v->one_of({"intel", "amd", "arm"});
    c.host_cpu_vendor = vendor == "amd" ? CpuVendor::amd : vendor == "arm" ? CpuVendor::arm : CpuVendor::intel;
  }
  c.collective_launch_us = optional_latency_us(j, "collective_launch_us");
  c.collective_launch_per_channel_us = optional_latency_us(j, "collective_launch_per_channel_us");
  if (auto by = j.find("collective_launch_us_by_kind")) {
    by->expect_object();
    by->allow_only({"allreduce", "reduce", "reduce_scatter", "allgather", "broadcast"});
    for (OpKind k : kNcclTestsKinds)
      if (auto v = by->find(op_kind_name(k))) c.collective_launch_us_by_kind[k] = latency_us(*v);
  }
  read_device(j.at("device"), c);
  if (c.devices_per_node > 1 || j.find("intra_node")) read_intra(j.at("intra_node"), c);
  if (c.library == CollectiveLibrary::nccl && c.device.compute_capability <= 0)
    j.at("collective_library").fail("\"ideal\": the NCCL model needs device.compute_capability (e.g. 8.0 for A100)");
  if (c.nodes > 1 || j.find("inter_node")) read_inter(j.at("inter_node"), c);
  if (auto f = j.find("framework")) read_framework(*f, c);
  if (auto f = j.find("interference")) read_interference(*f, c);
  return c;
}

ClusterSpec load_cluster(const std::string& file) { return cluster_from_json(JsonIn::parse_file(file), file); }

json cluster_to_json(const ClusterSpec& c) {
  json j;
  j["format"] = "redsim-cluster";
  j["version"] = 1;
  j["name"] = c.name;
  j["source"] = c.source;
  j["nodes"] = c.nodes;
  j["devices_per_node"] = c.devices_per_node;
  if (c.library == CollectiveLibrary::nccl) j["collective_library"] = "nccl";
  if (c.nccl_version != kModelledNcclVersion) j["nccl_version"] = nccl_version_name(c.nccl_version);
  j["collective_launch_us"] = c.collective_launch_us;
  if (c.collective_launch_per_channel_us > 0) j["collective_launch_per_channel_us"] = c.collective_launch_per_channel_us;
  if (!c.collective_launch_us_by_kind.empty()) {
    json by = json::object();
    for (const auto& [k, us] : c.collective_launch_us_by_kind) by[std::string(op_kind_name(k))] = us;
    j["collective_launch_us_by_kind"] = by;
  }
  j["device"] = {{"name", c.device.name}, {"compute_speedup", c.device.compute_speedup}, {"memory_GB", c.device.memory_GB},
               {"reduce_GBps", c.device.reduce_GBps}};
  if (!c.device.aliases.empty()) j["device"]["aliases"] = c.device.aliases;
  if (!c.device.speedup_reference.empty()) j["device"]["speedup_reference"] = c.device.speedup_reference;
  if (c.device.compute_capability > 0) j["device"]["compute_capability"] = c.device.compute_capability;
  if (c.device.sm_count > 0) j["device"]["sm_count"] = c.device.sm_count;
  if (c.device.pcie_GBps > 0) j["device"]["pcie_GBps"] = c.device.pcie_GBps;
  if (c.device.memory_GBps > 0) j["device"]["memory_GBps"] = c.device.memory_GBps;
  if (c.device.copy_GBps > 0) j["device"]["copy_GBps"] = c.device.copy_GBps;
  if (c.device.fresh_copy_GBps > 0) j["device"]["fresh_copy_GBps"] = c.device.fresh_copy_GBps;
  for (const auto& [t, GBps] : c.device.reduce_GBps_by_dtype) j["device"]["reduce_GBps_by_dtype"][std::string(dtype_name(t))] = GBps;
  if (c.framework.bucket_overhead_us > 0 || c.framework.bucket_copy || c.framework.copy_out_us_per_tensor > 0) {
    j["framework"] = {{"bucket_overhead_us", c.framework.bucket_overhead_us}, {"bucket_copy", c.framework.bucket_copy}};
    if (c.framework.copy_out_us_per_tensor > 0) j["framework"]["copy_out_us_per_tensor"] = c.framework.copy_out_us_per_tensor;
  }
  if (c.interference.active())
    j["interference"] = {{"compute_slowdown", c.interference.compute_slowdown_sm_share
                                                  ? json("sm_share")
                                                  : json(c.interference.compute_slowdown)},
                         {"collective_slowdown", c.interference.collective_slowdown},
                         {"collective_latency_us", c.interference.collective_latency_us}};
  if (c.host_cpu_vendor != CpuVendor::intel) j["host_cpu_vendor"] = c.host_cpu_vendor == CpuVendor::amd ? "amd" : "arm";
  if (c.devices_per_node > 1) {
    const char* fabric = c.intra.fabric == IntraFabric::pcie ? "pcie" : c.intra.fabric == IntraFabric::nvlink ? "nvlink" : "nvswitch";
    json in = {{"fabric", fabric}, {"link_bandwidth_GBps", c.intra.link_bandwidth_GBps}, {"latency_us", c.intra.latency_us}};
    if (c.intra.fabric == IntraFabric::nvswitch && c.intra.nvls) in["nvls"] = true;
    if (c.intra.devices_per_pcie_switch > 0) in["devices_per_pcie_switch"] = c.intra.devices_per_pcie_switch;
    if (c.intra.fabric == IntraFabric::pcie) {
      if (!c.intra.p2p) in["p2p"] = false;
      in["pcie_uplink_GBps"] = c.intra.pcie_uplink_GBps;
    }
    if (c.intra.sockets > 1) in["sockets"] = c.intra.sockets;
    if (c.intra.socket_link_GBps > 0) in["socket_link_GBps"] = c.intra.socket_link_GBps;
    if (c.intra.fabric == IntraFabric::nvlink) in["nvlinks"] = c.intra.nvlinks;
    j["intra_node"] = std::move(in);
  }
  if (c.nodes > 1) {
    json ex = {{"topology", c.inter.topology == InterTopology::fat_tree ? "fat-tree" : "star"},
               {"nics_per_node", c.inter.nics_per_node},
               {"nic_bandwidth_gbps", c.inter.nic_bandwidth_gbps},
               {"latency_us", c.inter.latency_us}};
    if (c.inter.net_plugin_latency_us > 0) ex["net_plugin_latency_us"] = c.inter.net_plugin_latency_us;
    if (c.inter.topology == InterTopology::fat_tree) {
      ex["nodes_per_leaf"] = c.inter.nodes_per_leaf;
      ex["oversubscription"] = c.inter.oversubscription;
      ex["spine_latency_us"] = c.inter.spine_latency_us;
    }
    j["inter_node"] = std::move(ex);
  }
  return j;
}

}  // namespace redsim
