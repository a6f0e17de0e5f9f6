#include "sim/platform.h"

#include <string>
#include <unordered_map>

#include <simgrid/s4u.hpp>

#include "sim/network.h"

namespace redsim {
namespace sg4 = simgrid::s4u;

namespace {
using Dir = sg4::LinkInRoute::Direction;
// Actor stack size: ample for the engines' actor bodies (loops over ops and simcalls; the
// solver runs on the maestro's stack), and under glibc's dynamic mmap threshold once reused.
constexpr int kActorStackKiB = 256;

constexpr const char* kLinkNames[] = {"dev", "pcie", "nic", "leaf", "socket", "nvlink", "gpupcie"};
}  // namespace

SimPlatform build_platform(const ClusterSpec& c, const RankPairs& pairs) {
  auto* zone = sg4::create_full_zone("cluster");
  SimPlatform p;
  const int world = c.world_size();
  for (int r = 0; r < world; ++r) p.hosts.push_back(zone->create_host("rank" + std::to_string(r), SimPlatform::kHostSpeedFlops));
  bool switches = false;
  for (const auto& [src, dst] : pairs) switches = switches || src >= world || dst >= world;
  if (switches)  // NVLS: each node's NVSwitch, reached through the devices' ports
    for (int m = 0; m < c.nodes; ++m) p.hosts.push_back(zone->create_host("nvswitch" + std::to_string(m), SimPlatform::kHostSpeedFlops));

  // One split-duplex link per link the routes use (sim/network.h names them for both fidelities).
  std::unordered_map<std::uint64_t, sg4::SplitDuplexLink*> links;
  auto link_of = [&](const LinkRef& l) {
    LinkRef both = l;
    both.up = true;
    auto it = links.find(both.key());
    if (it != links.end()) return it->second;
    auto* link = zone->create_split_duplex_link(
        std::string(kLinkNames[static_cast<int>(l.kind)]) + std::to_string(l.index), link_bandwidth_Bps(c, l));
    link->set_latency(link_latency_s(c, l));
    link->seal();
    return links.emplace(both.key(), link).first->second;
  };
  const Fold none = unfolded(c);
  for (const auto& [src, dst] : pairs) {
    std::vector<sg4::LinkInRoute> route;
    for (const auto& l : route_between(c, src, dst, none)) route.emplace_back(link_of(l), l.up ? Dir::UP : Dir::DOWN);
    zone->add_route(p.hosts[static_cast<std::size_t>(src)]->get_netpoint(),
                    p.hosts[static_cast<std::size_t>(dst)]->get_netpoint(), nullptr, nullptr, route, false);
  }
  zone->seal();
  return p;
}

void configure_engine(simgrid::s4u::Engine& engine) {
  engine.set_config("network/model:CM02");
  engine.set_config("network/crosstraffic:0");
  engine.set_config("network/TCP-gamma:0");
  engine.set_config("contexts/stack-size:" + std::to_string(kActorStackKiB));
  engine.set_config("contexts/guard-size:0");
}

}  // namespace redsim
