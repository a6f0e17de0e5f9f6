// Outputs are written to a temporary file beside the target and renamed into place, so a
// crash or a bad input never leaves a half-written file behind.
#pragma once
#include <string>
#include <string_view>

namespace redsim {

// Throws InputError (naming the path) if the directory is not writable.
void write_file_atomically(const std::string& path, std::string_view contents);

}  // namespace redsim
