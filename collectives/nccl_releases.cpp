#include "collectives/nccl_releases.h"

namespace redsim::nccl {
namespace {

// NVIDIA/nccl v2.19.3-1 src/graph/tuning.cc baseLat and hwLat: NVLS latencies move from baseLat
// (23) into the NVLink row, Tree/Simple gets 28 us a hop everywhere, CollNet's change.
constexpr AlgoProto kBase219{{{6.8, 14.0, 0.0}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}}};
constexpr AlgoProto kNvlink219{{{0.6, 1.25, 28}, {0.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 23}, {0, 0, 23}}};
constexpr AlgoProto kPci219{{{1.0, 1.9, 28}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0}}};
constexpr AlgoProto kNet219{{{5.0, 8.5, 28}, {2.7, 4.0, 14.0}, {0, 0, 31}, {0, 0, 30}, {0, 0, 18}, {0, 0, 14}}};
// v2.21.5-1: NVLS on NVLink 25 us.
constexpr AlgoProto kNvlink221{{{0.6, 1.25, 28}, {0.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 25}, {0, 0, 25}}};
// v2.23.4-1: Tree/Simple base 8.4 us, 4 us a hop inside a node and 14 across (unchanged to 2.29).
constexpr AlgoProto kBase223{{{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}}};
constexpr AlgoProto kNvlink223{{{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 25}, {0, 0, 25}}};
constexpr AlgoProto kPci223{{{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0}}};
constexpr AlgoProto kNet223{{{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 31}, {0, 0, 30}, {0, 0, 18}, {0, 0, 14}}};
// v2.21.5-1 llMaxBws: Hopper on one node 141 GB/s (rows 1-2 are the CPU vendor's with several
// nodes, and the Hopper row's multi-node entries are not read).
constexpr GenNodes kLlMax221{{{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}}};

const Release kReleases[] = {
    {21805, "v2.18.5-1", kBaseLatUs, kHwLatUs, kLlMaxBwGBps, false, false, false},
    {21903, "v2.19.3-1", kBase219, {kNvlink219, kPci219, kNet219}, kLlMaxBwGBps, false, true, false},
    {22105, "v2.21.5-1", kBase219, {kNvlink221, kPci219, kNet219}, kLlMax221, true, true, false, 131072},
    {22304, "v2.23.4-1", kBase223, {kNvlink223, kPci223, kNet223}, kLlMax221, true, true, true, 131072},
};

}  // namespace

const Release& release_of(int nccl_version) {
  const Release* r = &kReleases[0];
  // 2.19.1 is the first 2.19 release; its model is 2.19.3's (likewise within 2.21 and 2.23).
  for (const auto& k : kReleases)
    if (nccl_version >= k.first_version / 100 * 100) r = &k;
  return *r;
}

}  // namespace redsim::nccl
