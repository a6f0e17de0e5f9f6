// Runs a function in a forked child and returns the bytes it produced.
#pragma once
#include <functional>
#include <string>

namespace redsim {

// The child runs `work` and sends its result through a pipe; a child that fails (exception,
// signal, abort inside SimGrid) becomes a std::runtime_error here, with its message if it had one.
std::string run_in_child(const std::function<std::string()>& work);

}  // namespace redsim
