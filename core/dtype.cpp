#include "core/dtype.h"

#include <array>
#include <utility>

namespace redsim {
namespace {
struct DTypeInfo {
  DType type;
  std::string_view name;
  std::int64_t size_bytes;
  bool is_float;
};
constexpr std::array<DTypeInfo, 8> kTypes{{
    {DType::fp32, "fp32", 4, true},
    {DType::fp16, "fp16", 2, true},
    {DType::bf16, "bf16", 2, true},
    {DType::fp64, "fp64", 8, true},
    {DType::int64, "int64", 8, false},
    {DType::int32, "int32", 4, false},
    {DType::uint8, "uint8", 1, false},
    {DType::bool8, "bool", 1, false},
}};
const DTypeInfo& info(DType t) {
  for (const auto& i : kTypes)
    if (i.type == t) return i;
  return kTypes[0];
}
}  // namespace

std::int64_t dtype_size_bytes(DType t) { return info(t).size_bytes; }
std::string_view dtype_name(DType t) { return info(t).name; }
bool dtype_is_float(DType t) { return info(t).is_float; }

std::optional<DType> parse_dtype(std::string_view name) {
  for (const auto& i : kTypes)
    if (i.name == name) return i.type;
  // Common aliases from PyTorch's dtype names.
  static constexpr std::array<std::pair<std::string_view, DType>, 6> kAliases{{
      {"float32", DType::fp32}, {"float16", DType::fp16}, {"bfloat16", DType::bf16},
      {"float64", DType::fp64}, {"half", DType::fp16}, {"float", DType::fp32}}};
  for (const auto& [alias, t] : kAliases)
    if (alias == name) return t;
  return std::nullopt;
}

std::string_view dtype_choices() { return "fp32|fp16|bf16|fp64|int64|int32|uint8|bool"; }

}  // namespace redsim
