// The one JSON parser of every reader: nlohmann's, with the checks its defaults lack. Nesting is
// bounded (a file nested 100,000 deep would otherwise overflow the stack of any recursive walk,
// such as an error message quoting the value), duplicate keys are rejected (nlohmann keeps the
// last one silently), and an out-of-range number (1e999) is bad input naming its JSON path.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace redsim {

// Deepest nesting of arrays and objects a redsim input may have (real inputs use fewer than 10).
inline constexpr int kMaxJsonDepth = 256;
// Largest input file read (the bundled traces and clusters are under 100 KiB).
inline constexpr std::size_t kMaxJsonFileBytes = std::size_t{256} << 20;

// Throws InputError (file, JSON path, what was expected) on any of the above or malformed JSON.
nlohmann::json parse_json_strict(const std::string& text, const std::string& file);

}  // namespace redsim
