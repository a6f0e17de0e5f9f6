// Element types of parameters, gradients and buffers.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

namespace redsim {

enum class DType { fp32, fp16, bf16, fp64, int64, int32, uint8, bool8 };

std::int64_t dtype_size_bytes(DType t);
std::string_view dtype_name(DType t);
std::optional<DType> parse_dtype(std::string_view name);
// The names accepted by parse_dtype, "|"-separated, for error messages and --help.
std::string_view dtype_choices();
// Gradients are only reduced in floating-point types.
bool dtype_is_float(DType t);

}  // namespace redsim
