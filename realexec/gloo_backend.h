// Gloo over TCP: one gloo::rendezvous::Context per communicator, each with its own TCP device
// (and so its own event-loop thread), connected through the rendezvous store under the prefix
// "redsim/gloo/<name>/". allreduce, reduce and broadcast are Gloo's own algorithms (ring,
// ring + gather, binomial tree); reduce_scatter and allgather with arbitrary shards are rings
// written here on Gloo's unbound buffers. Reductions use realexec's kernels (bf16 included).
#pragma once
#include <chrono>
#include <memory>
#include <string>

#include <gloo/rendezvous/store.h>

#include "realexec/backend.h"

namespace redsim::realexec {

struct GlooOptions {
  // The address other ranks reach this one at (tcp attr hostname), e.g. "127.0.0.1" for a
  // local run; empty: resolve this host's name. `iface` (e.g. "eth0") wins when given.
  std::string hostname;
  std::string iface;
  std::chrono::milliseconds timeout{60000};  // every collective and the step barrier
};

// Connects the control communicator (for barriers) before returning. `store` must outlive the
// backend's communicator creation calls.
std::unique_ptr<Backend> make_gloo_backend(gloo::rendezvous::Store& store, int rank, int world_size,
                                           const GlooOptions& options);

}  // namespace redsim::realexec
