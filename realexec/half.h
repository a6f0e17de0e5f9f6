// IEEE fp16 and bfloat16 as 16-bit patterns, converted to and from float with
// round-to-nearest-even (what CUDA's __float2half_rn and PyTorch's bf16 conversion do).
// Gloo has no bf16 (and its fp16 type is only a storage type); realexec reduces both in
// float and rounds once per reduction step, so sums of small integers stay exact.
#pragma once
#include <bit>
#include <cstdint>

namespace redsim::realexec {

inline float bf16_to_float(std::uint16_t h) { return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16); }

inline std::uint16_t float_to_bf16(float f) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0)
    return static_cast<std::uint16_t>((u >> 16) | 0x0040u);  // NaN stays a (quiet) NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
  return static_cast<std::uint16_t>(u >> 16);
}

inline float fp16_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  std::uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);  // inf / NaN
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);  // normal: rebias 15 -> 127
  } else if (mant == 0) {
    bits = sign;  // +-0
  } else {
    // Subnormal: value = mant * 2^-24; normalise.
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400u) == 0);
    bits = sign | (static_cast<std::uint32_t>(112 - e) << 23) | ((mant & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

inline std::uint16_t float_to_fp16(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const std::uint32_t abs = u & 0x7fffffffu;
  if (abs >= 0x7f800000u)  // inf or NaN
    return static_cast<std::uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  if (abs >= 0x477ff000u)  // rounds to >= 65520: overflow to inf
    return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (abs < 0x38800000u) {
    // Result is subnormal (or zero) in fp16: value / 2^-24, rounded to nearest even.
    if (abs < 0x33000000u) return sign;  // < 2^-25: rounds to zero
    const std::uint32_t exp = abs >> 23;
    const std::uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126u - exp;  // 14 + (112 - exp) - ... : bits dropped
    const std::uint32_t half_bits = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1u);
    const std::uint32_t halfway = 1u << (shift - 1u);
    std::uint32_t r = half_bits;
    if (rem > halfway || (rem == halfway && (half_bits & 1u))) ++r;
    return static_cast<std::uint16_t>(sign | r);
  }
  // Normal: rebias and round the 13 dropped mantissa bits to nearest even.
  std::uint32_t v = abs - 0x38000000u;  // exponent 127 -> 15
  v += 0x0fffu + ((v >> 13) & 1u);
  return static_cast<std::uint16_t>(sign | (v >> 13));
}

}  // namespace redsim::realexec
