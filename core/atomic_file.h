// Outputs are written to a temporary file beside the target and renamed into place, so a
// crash or a bad input never leaves a half-written file behind. The temporary file is created
// exclusively under an unpredictable name (a planted file or symlink cannot redirect the write)
// and removed on every path. A target that exists and is not a regular file (/dev/null, a FIFO,
// a terminal) is written in place, never replaced.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace redsim {

// Throws InputError (naming the path) if the directory is not writable.
void write_file_atomically(const std::string& path, std::string_view contents);
// The same, with the contents produced piece by piece: `produce` calls its argument with each
// piece, which goes to the file as it comes (an output of gigabytes is never held whole).
using OutputSink = std::function<void(std::string_view)>;
void write_file_atomically(const std::string& path, const std::function<void(const OutputSink&)>& produce);

// A file named on the command line: the option that named it, for the message.
struct NamedPath {
  std::string option;  // "--trace"
  std::string path;    // "" when the option was not given
};

// Throws InputError (exit 2) when an output names the same file as an input, or two outputs the
// same regular file: writing one would destroy the other or silently keep only one.
void check_outputs_distinct(const std::vector<NamedPath>& inputs, const std::vector<NamedPath>& outputs);

// Throws InputError (exit 2) for an output that write_file_atomically could not write: an existing
// directory or other file that is neither regular, a character device nor a FIFO, or a path whose
// directory is missing or not writable. Called before long work (a tune search, a real run), so
// that the work is not thrown away at the end.
void check_output_targets(const std::vector<NamedPath>& outputs);

}  // namespace redsim
