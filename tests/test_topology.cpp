// Topologies as built: NICs independent of devices, PCIe servers without peer-to-peer (through
// host memory and across the socket link), and NVLink wired as a matrix (DGX-1).
#include <catch2/catch.hpp>

#include <map>

#include "collectives/nccl_topology.h"
#include "collectives/shapes.h"
#include "core/cluster_json.h"
#include "sim/network.h"
#include "sim/sim_engine.h"
#include "tests/test_support.h"

using namespace redsim;

namespace {
ClusterSpec preset(const std::string& name) { return load_cluster(std::string(REDSIM_SOURCE_DIR "/configs/") + name + ".json"); }
const SimOptions kExact{false, Fidelity::exact}, kScalable{false, Fidelity::scalable};
}  // namespace

TEST_CASE("a ring's bytes across nodes are conserved and spread evenly over the NICs, however many", "[topology]") {
  // 2 nodes x 8 devices, C = 8 channels: each channel's ring crosses between the nodes twice,
  // each crossing carrying 2(N-1)/N x S/C. Rotating each channel's ring inside the node makes
  // the crossings leave through every NIC link alike.
  const std::int64_t S = 64 << 20;
  const int C = 8, N = 16;
  const double per_edge = 2.0 * (N - 1) / N * S / C;
  for (int nics : {4, 8, 16}) {
    CAPTURE(nics);
    auto c = testing::ideal_multi_node(2, 8, 240e9, 0.5e-6, 25e9, 1e-6);
    c.inter.nics_per_node = nics;
    std::map<std::uint64_t, double> load;  // per NIC link (bonded per device), bytes sent up
    double total = 0;
    for (int ch = 0; ch < C; ++ch) {
      const auto ring = ring_order(c, ch, C);
      for (std::size_t i = 0; i < ring.size(); ++i) {
        const int a = ring[i], b = ring[(i + 1) % ring.size()];
        if (c.node_of(a) == c.node_of(b)) continue;
        for (const auto& l : route_between(c, a, b, unfolded(c)))
          if (l.kind == LinkKind::nic && l.up) load[l.key()] += per_edge, total += per_edge;
      }
    }
    CHECK(total == Approx(2.0 * C * per_edge));
    const int links = std::min(nics, 8) * 2;  // NIC links of both nodes
    CHECK(static_cast<int>(load.size()) == std::min(links, 2 * C));
    for (const auto& [key, bytes] : load) CHECK(bytes == Approx(total / static_cast<double>(load.size())));
  }
}

TEST_CASE("inter-node rings run as fast as the NICs: 4, 8 or 16 NICs per node", "[topology]") {
  // NIC-bound ring allreduce over 2 nodes, 8 channels: time ~ bytes per NIC / NIC rate, so half
  // the NICs take twice as long and 16 NICs (two per device, bonded) half as long.
  auto time_with = [](int nics) {
    auto c = testing::ideal_multi_node(2, 8, 4000e9, 0.5e-6, 12.5e9, 1e-6);
    c.inter.nics_per_node = nics;
    return testing::end_of(simulate(testing::single_allreduce_plan(16, 256 << 20, 8), c, kExact));
  };
  const double t4 = time_with(4), t8 = time_with(8), t16 = time_with(16);
  CHECK(t4 / t8 == Approx(2.0).epsilon(0.03));
  CHECK(t8 / t16 == Approx(2.0).epsilon(0.03));
}

TEST_CASE("without peer-to-peer, traffic goes through host memory and across the socket link", "[topology]") {
  const auto g5 = preset("pcie-a10g-8gpu");  // 8 GPUs, 4 per socket, one per root port, p2p off
  auto kinds = [&](int a, int b) {
    std::vector<LinkKind> k;
    for (const auto& l : route_between(g5, a, b, unfolded(g5))) k.push_back(l.kind);
    return k;
  };
  // Same socket: up the GPU's link and root port to host memory, then down the other's.
  CHECK(kinds(0, 1) == std::vector<LinkKind>{LinkKind::device, LinkKind::pcie_uplink, LinkKind::pcie_uplink, LinkKind::device});
  // Across sockets: the socket link as well.
  CHECK(kinds(3, 4) == std::vector<LinkKind>{LinkKind::device, LinkKind::pcie_uplink, LinkKind::socket, LinkKind::socket,
                                             LinkKind::pcie_uplink, LinkKind::device});
  // A ring over both sockets crosses the 16 GB/s socket link once each way: with ideal
  // collectives it runs at 2(N-1)/N x S / 16 GB/s plus its latencies.
  auto c = g5;
  c.library = CollectiveLibrary::ideal;
  c.collective_launch_us = 0;
  const std::int64_t S = 256 << 20;
  const double bw = 2.0 * 7 / 8 * S / 16e9;
  const double lat = 14 * 1e-6;  // each hop: two device links of 0.5 us
  for (const auto& opt : {kExact, kScalable})
    CHECK(testing::end_of(simulate(testing::single_allreduce_plan(8, S, 1), c, opt)) == Approx(bw + lat).epsilon(0.01));
  // NCCL sees PCI paths: no LL128, PCI latencies.
  CHECK_FALSE(nccl::topology_of(g5).ll128);
  CHECK(nccl::topology_of(g5).ring.intra_hw == nccl::Hw::pci);
}

TEST_CASE("a DGX-1's rings follow its NVLinks: 6 rings of 20 GB/s, 12 channels", "[topology]") {
  // Each V100 has 6 NVLinks of 20 GB/s (NCCL's SM70 figure): a ring channel uses one link out
  // and one in per GPU, so at most 6 rings of 20 GB/s, as NCCL's own search finds.
  const auto d1 = preset("dgx1-v100");
  const auto t = nccl::topology_of(d1);
  CHECK(t.ring.channels == 6);
  CHECK(t.ring.bw_intra_GBps == 20);
  CHECK(t.comm_channels == 12);
  for (int ch = 0; ch < 12; ++ch) {
    const auto ring = ring_order(d1, ch, 12);
    for (std::size_t i = 0; i < ring.size(); ++i)
      CHECK(d1.intra.nvlinks[static_cast<std::size_t>(ring[i])][static_cast<std::size_t>(ring[(i + 1) % 8])] > 0);
  }
}
