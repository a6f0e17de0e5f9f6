// NCCL_ALGO and NCCL_PROTO values beyond one name, as NCCL parses them (NVIDIA/nccl
// src/graph/tuning.cc, parseList): a list ("Ring,Tree"), an exclusion ("^NVLS": every name but
// those listed) and, from NCCL 2.24, entries per collective function separated by ';', each
// "function:list" except possibly the first, which then applies to every function
// ("Ring;allreduce:Tree,Ring"); a later entry replaces its function's list. Names and functions
// are case-insensitive. The owner of these values' syntax: it reads them and writes them back.
// What a release makes of a parsed value is collectives/nccl_algo_pin.h's.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace redsim {

enum class Algorithm;  // core/collective_types.h, which includes this file
enum class Protocol;

enum class NcclListOf { algorithms, protocols };

// NCCL's collective functions in its order, as the prefixes name them (ncclFuncStr): Broadcast,
// Reduce, AllGather, ReduceScatter, AllReduce.
constexpr int kNcclFunctions = 5;

struct NcclList {
  NcclListOf of = NcclListOf::algorithms;
  // The names each function keeps: bit 1 << Algorithm (or << Protocol), NCCL's names only
  // (no hierarchical or binomial).
  std::array<std::uint32_t, kNcclFunctions> enabled{};
  bool per_function = false;  // a "function:" prefix (NCCL 2.24+ only)
  bool operator==(const NcclList&) const = default;
};

// The bits of every name NCCL_ALGO (or NCCL_PROTO) takes.
std::uint32_t nccl_all_names(NcclListOf of);

// Parses `value`; on bad syntax or an unknown name returns nullopt with `*error` saying what was
// expected. A single name parses too (a list of one).
std::optional<NcclList> parse_nccl_list(NcclListOf of, std::string_view value, std::string* error);

// The value in NCCL's spellings: one list when every function keeps the same names ("Ring,Tree",
// or "^NVLS" when shorter; "^" for every name), else the list most functions keep (left out when
// that is every name) and an entry for each other function ("AllGather:PAT;ReduceScatter:PAT").
// Holds ';' only in the per-function form, which a shell must see quoted.
std::string nccl_list_value(const NcclList& list);

// A setting of --algorithm / --protocol or a knobs file's "algorithm" / "protocol": "auto" (both
// unset), one name (`single`; for algorithms also redsim's hierarchical) or a list (`list`).
// False with `*error` saying what was expected.
bool parse_algorithm_setting(std::string_view value, std::optional<Algorithm>* single, std::optional<NcclList>* list,
                             std::string* error);
bool parse_protocol_setting(std::string_view value, std::optional<Protocol>* single, std::optional<NcclList>* list,
                            std::string* error);

}  // namespace redsim
