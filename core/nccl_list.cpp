#include "core/nccl_list.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <vector>

#include "core/collective_types.h"

namespace redsim {
namespace {

constexpr std::array<std::string_view, kNcclFunctions> kFunctions{"Broadcast", "Reduce", "AllGather", "ReduceScatter",
                                                                  "AllReduce"};
// NCCL_ALGO's names in NCCL's order (ncclAlgoStr), then NCCL_PROTO's (ncclProtoStr).
constexpr std::array<Algorithm, 7> kAlgorithms{Algorithm::tree,           Algorithm::ring, Algorithm::collnet_direct,
                                               Algorithm::collnet_chain,  Algorithm::nvls, Algorithm::nvls_tree,
                                               Algorithm::pat};
constexpr std::array<Protocol, 3> kProtocols{Protocol::ll, Protocol::ll128, Protocol::simple};

bool iequal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    const auto end = std::min(s.find(sep, start), s.size());
    out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// One name's bit, 0 if NCCL has no such name.
std::uint32_t name_bit(NcclListOf of, std::string_view name) {
  if (of == NcclListOf::protocols) {
    const auto p = parse_protocol(name);
    return p ? 1u << static_cast<int>(*p) : 0u;
  }
  const auto a = parse_algorithm(name);
  if (!a || *a == Algorithm::hierarchical) return 0u;  // redsim's own, not NCCL_ALGO's
  return 1u << static_cast<int>(*a);
}

std::string expected_names(NcclListOf of) {
  return of == NcclListOf::protocols ? "LL, LL128, Simple" : "Ring, Tree, NVLS, NVLSTree, CollNetDirect, CollNetChain, PAT";
}

// The names of one entry's list ("Ring,Tree" or "^NVLS"): the bits it enables.
std::optional<std::uint32_t> parse_names(NcclListOf of, std::string_view list, std::string* error) {
  const bool exclude = !list.empty() && list.front() == '^';
  if (exclude) list.remove_prefix(1);
  std::uint32_t bits = 0;
  for (auto name : split(list, ',')) {
    if (name.empty()) continue;  // NCCL's strtok skips empty tokens
    const std::uint32_t b = name_bit(of, name);
    if (!b) {
      *error = "unknown name \"" + std::string(name) + "\" (expected " + expected_names(of) + ")";
      return std::nullopt;
    }
    bits |= b;
  }
  if (!bits && !exclude) {
    *error = "an empty list (expected " + expected_names(of) + ")";
    return std::nullopt;
  }
  return exclude ? nccl_all_names(of) & ~bits : bits;
}

std::string names_of(NcclListOf of, std::uint32_t bits) {
  std::string out;
  auto add = [&](std::uint32_t b, std::string_view n) {
    if (bits & b) out += (out.empty() ? "" : ",") + std::string(n);
  };
  if (of == NcclListOf::protocols)
    for (auto p : kProtocols) add(1u << static_cast<int>(p), nccl_protocol_name(p));
  else
    for (auto a : kAlgorithms) add(1u << static_cast<int>(a), nccl_algorithm_name(a));
  return out;
}

// A list's shortest spelling: the names kept, or '^' and the names dropped ("^" keeps all).
std::string list_value(NcclListOf of, std::uint32_t bits) {
  const std::uint32_t all = nccl_all_names(of), dropped = all & ~bits;
  if (std::popcount(dropped) < std::popcount(bits)) return "^" + names_of(of, dropped);
  return bits ? names_of(of, bits) : "^" + names_of(of, all);
}

// Whether `value` is more than one name (has ',', '^', ';' or ':'): a list, not a single name.
bool is_nccl_list_syntax(std::string_view value) { return value.find_first_of(",^;:") != std::string_view::npos; }

template <class T, class Parse>
bool parse_setting(NcclListOf of, std::string_view value, std::optional<T>* single, std::optional<NcclList>* list,
                   Parse parse_one, std::string_view names, std::string* error) {
  single->reset();
  list->reset();
  if (value == "auto") return true;
  if (!is_nccl_list_syntax(value)) {
    *single = parse_one(value);
    if (!*single) *error = "expected auto, " + std::string(names) + " or an NCCL list (e.g. \"^" +
                           (of == NcclListOf::protocols ? "LL128" : "NVLS") + "\"), got \"" + std::string(value) + "\"";
    return single->has_value();
  }
  std::string why;
  *list = parse_nccl_list(of, value, &why);
  if (!*list) *error = "\"" + std::string(value) + "\": " + why;
  return list->has_value();
}

}  // namespace

bool parse_algorithm_setting(std::string_view value, std::optional<Algorithm>* single, std::optional<NcclList>* list,
                             std::string* error) {
  return parse_setting(NcclListOf::algorithms, value, single, list, parse_algorithm,
                       "ring|tree|nvls|nvlstree|collnet|collnet_chain|hierarchical|pat", error);
}

bool parse_protocol_setting(std::string_view value, std::optional<Protocol>* single, std::optional<NcclList>* list,
                            std::string* error) {
  return parse_setting(NcclListOf::protocols, value, single, list, parse_protocol, "ll|ll128|simple", error);
}

std::uint32_t nccl_all_names(NcclListOf of) {
  std::uint32_t bits = 0;
  if (of == NcclListOf::protocols)
    for (auto p : kProtocols) bits |= 1u << static_cast<int>(p);
  else
    for (auto a : kAlgorithms) bits |= 1u << static_cast<int>(a);
  return bits;
}

std::optional<NcclList> parse_nccl_list(NcclListOf of, std::string_view value, std::string* error) {
  NcclList list;
  list.of = of;
  list.enabled.fill(nccl_all_names(of));
  bool first = true, any = false;
  for (auto entry : split(value, ';')) {
    if (entry.empty()) continue;
    const auto parts = split(entry, ':');
    if (parts.size() > 2) {
      *error = "entry \"" + std::string(entry) + "\" has more than one ':'";
      return std::nullopt;
    }
    const bool prefixed = parts.size() == 2;
    if (!prefixed && !first) {
      *error = "entry \"" + std::string(entry) + "\": every entry but the first needs a \"function:\" prefix";
      return std::nullopt;
    }
    int function = -1;  // every function
    if (prefixed) {
      const auto it = std::find_if(kFunctions.begin(), kFunctions.end(), [&](auto f) { return iequal(f, parts[0]); });
      if (it == kFunctions.end()) {
        *error = "unknown function \"" + std::string(parts[0]) +
                 "\" (expected Broadcast, Reduce, AllGather, ReduceScatter or AllReduce)";
        return std::nullopt;
      }
      function = static_cast<int>(it - kFunctions.begin());
      list.per_function = true;
    }
    const auto bits = parse_names(of, parts.back(), error);
    if (!bits) return std::nullopt;
    for (int f = 0; f < kNcclFunctions; ++f)
      if (function < 0 || function == f) list.enabled[static_cast<std::size_t>(f)] = *bits;
    first = false;
    any = true;
  }
  if (!any) {
    *error = "an empty value (expected " + expected_names(of) + ")";
    return std::nullopt;
  }
  return list;
}

std::string nccl_list_value(const NcclList& list) {
  // The list most functions keep (the first such in NCCL's order on a tie) is written once,
  // unprefixed, and left out when it is every name (NCCL's default for an unnamed function).
  std::uint32_t base = list.enabled[0];
  long best = 0;
  for (auto bits : list.enabled)
    if (const auto n = std::count(list.enabled.begin(), list.enabled.end(), bits); n > best) best = n, base = bits;
  if (best == kNcclFunctions) return list_value(list.of, base);
  const bool write_base = base != nccl_all_names(list.of);
  std::string out = write_base ? list_value(list.of, base) : "";
  for (int f = 0; f < kNcclFunctions; ++f) {
    const auto bits = list.enabled[static_cast<std::size_t>(f)];
    if (bits == base) continue;
    out += (out.empty() ? "" : ";") + std::string(kFunctions[static_cast<std::size_t>(f)]) + ":" + list_value(list.of, bits);
  }
  return out;
}

}  // namespace redsim
