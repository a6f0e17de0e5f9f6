// A small fork-join helper: the tuner's simulations and plannings run on a few threads (each
// simulation itself runs in a forked child, see sim/child_process.h).
#pragma once
#include <cstddef>
#include <functional>

namespace redsim::tune {

// std::thread::hardware_concurrency(), at least 1.
int default_threads();

// Calls fn(i) for every i in [0, n) on up to `threads` threads. Results must be written by index,
// so the order in which calls finish never matters. If calls throw, the exception of the lowest
// failing i is rethrown once all threads have stopped.
void parallel_for(std::size_t n, int threads, const std::function<void(std::size_t)>& fn);

}  // namespace redsim::tune
