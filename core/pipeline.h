// How collectives split their buffers. Pipelining for chain and tree collectives: a channel's
// share of the buffer moves in chunks of at most kPipelineChunkBytes, so a long chain or a deep
// tree streams instead of storing and forwarding the whole buffer at every hop. The simulator
// models it; realexec's Gloo chains run it.
#pragma once
#include <cstdint>

namespace redsim {

// NCCL's Simple protocol moves 4 MiB buffers in 8 steps: 512 KiB per step.
inline constexpr std::int64_t kPipelineChunkBytes = 512 * 1024;

// Splits `total` into `parts` near-equal integer pieces (the first total % parts get one more),
// as collectives split a buffer into channels and chunks: the simulator, its cost formulas and
// realexec all use this one rule.
inline std::int64_t split_piece(std::int64_t total, int parts, int index) {
  return total / parts + (index < total % parts ? 1 : 0);
}

inline int pipeline_chunks(std::int64_t bytes) {
  return bytes <= kPipelineChunkBytes ? 1 : static_cast<int>((bytes + kPipelineChunkBytes - 1) / kPipelineChunkBytes);
}

}  // namespace redsim
