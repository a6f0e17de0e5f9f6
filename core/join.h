// Joins names for messages and --help ("a|b|c"). Written out longhand because g++ 12 warns
// falsely (-Wrestrict) on `"literal" + std::string` at -O2.
#pragma once
#include <string>
#include <string_view>

namespace redsim {

template <class Range>
std::string join(const Range& items, std::string_view sep) {
  std::string out;
  bool first = true;
  for (const auto& item : items) {
    if (!first) out.append(sep);
    out.append(std::string_view(item));
    first = false;
  }
  return out;
}

}  // namespace redsim
