// The Timeline: per rank, per Plan op, when it was issued, started and ended, and bytes moved.
// Simulated and measured runs produce the same type, so they compare op by op.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace redsim {

struct OpTiming {
  double ready_s = 0;  // dependencies met and the stream free: the op is issued
  double start_s = 0;  // work began (a collective begins once every rank has issued it)
  double end_s = 0;
  std::int64_t bytes_sent = 0;      // by this rank, over the network/fabric, for this op
  std::int64_t bytes_received = 0;
};

struct Timeline {
  std::string source;  // "simulated" or "measured"
  int world_size = 0;
  std::size_t op_count = 0;
  std::vector<OpTiming> timings;  // rank-major: timings[rank * op_count + op]

  Timeline() = default;
  Timeline(std::string src, int world, std::size_t ops)
      : source(std::move(src)), world_size(world), op_count(ops), timings(static_cast<std::size_t>(world) * ops) {}
  OpTiming& at(int rank, std::size_t op) { return timings[static_cast<std::size_t>(rank) * op_count + op]; }
  const OpTiming& at(int rank, std::size_t op) const {
    return timings[static_cast<std::size_t>(rank) * op_count + op];
  }
};

}  // namespace redsim
