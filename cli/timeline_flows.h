// Extras for the Perfetto timeline that make the overlap visible: flow arrows from each op a
// collective waits on (a layer's backward whose gradients fill the bucket, or the framework's
// bucket copy) to the collective, and a counter track of the collective bytes in flight.
#pragma once
#include "core/chrome_trace.h"
#include "core/cluster.h"
#include "core/plan.h"
#include "core/timeline.h"

namespace redsim::cli {

// Events to add to a Chrome trace of `ranks` (core/chrome_trace.h: write_chrome_trace's `more`).
// Flows are drawn for the first of them only (every rank runs the same Plan, and a flow per rank
// would multiply the file by the world size); the counter is per rank ("collective bytes in
// flight", bytes each rank contributes to the collectives running at that instant; "bytes sent in
// flight: nvlink|pci|net", the wire bytes it sends over each link class while they run).
void flow_and_counter_events(const Plan& plan, const ClusterSpec& cluster, const Timeline& timeline,
                             const std::vector<int>& ranks, const EventSink& emit);

}  // namespace redsim::cli
