// fp16/bf16 conversions against known bit patterns, and the reduce kernels against scalar math.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "realexec/half.h"
#include "realexec/reduce_kernels.h"

using namespace redsim;
using namespace redsim::realexec;

TEST_CASE("fp16 conversion matches IEEE binary16 bit patterns", "[realexec][half]") {
  CHECK(float_to_fp16(0.0f) == 0x0000);
  CHECK(float_to_fp16(-0.0f) == 0x8000);
  CHECK(float_to_fp16(1.0f) == 0x3c00);
  CHECK(float_to_fp16(-2.0f) == 0xc000);
  CHECK(float_to_fp16(65504.0f) == 0x7bff);
  CHECK(float_to_fp16(65520.0f) == 0x7c00);  // rounds to infinity
  CHECK(float_to_fp16(std::numeric_limits<float>::infinity()) == 0x7c00);
  CHECK(float_to_fp16(std::ldexp(1.0f, -24)) == 0x0001);  // smallest subnormal
  CHECK(float_to_fp16(std::ldexp(1.0f, -14)) == 0x0400);  // smallest normal
  CHECK(float_to_fp16(0.1f) == 0x2e66);
  // Ties to even: 2049 lies halfway between 2048 and 2050; 2051 between 2050 and 2052.
  CHECK(fp16_to_float(float_to_fp16(2049.0f)) == 2048.0f);
  CHECK(fp16_to_float(float_to_fp16(2051.0f)) == 2052.0f);
  CHECK(std::isnan(fp16_to_float(float_to_fp16(std::nanf("")))));
  // Every fp16 value round-trips through float.
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0) continue;  // NaNs
    const float f = fp16_to_float(static_cast<std::uint16_t>(h));
    REQUIRE(float_to_fp16(f) == h);
  }
  CHECK(fp16_to_float(0x0001) == std::ldexp(1.0f, -24));
  CHECK(fp16_to_float(0x3555) == Approx(0.333251953125f));
}

TEST_CASE("bf16 conversion rounds to nearest even", "[realexec][half]") {
  CHECK(float_to_bf16(1.0f) == 0x3f80);
  CHECK(float_to_bf16(-1.0f) == 0xbf80);
  CHECK(float_to_bf16(256.0f) == 0x4380);
  CHECK(bf16_to_float(float_to_bf16(257.0f)) == 256.0f);  // tie -> even
  CHECK(bf16_to_float(float_to_bf16(259.0f)) == 260.0f);  // tie -> even
  CHECK(bf16_to_float(float_to_bf16(3.0f)) == 3.0f);
  CHECK(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const float f = bf16_to_float(static_cast<std::uint16_t>(h));
    if (std::isnan(f)) continue;
    REQUIRE(float_to_bf16(f) == h);
  }
}

TEST_CASE("reduce kernels: every op and dtype against scalar math", "[realexec][kernels]") {
  const std::vector<float> a{1, -2, 3, 7, -8, 0.5f, 100, -3};
  const std::vector<float> b{4, 5, -6, 7, 2, 0.25f, -100, -3};
  for (DType dt : {DType::fp32, DType::fp16, DType::bf16}) {
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min, ReduceOp::prod}) {
      INFO(dtype_name(dt) << " " << reduce_op_name(op));
      auto fn = reduce_function(dt, op);
      if (dt == DType::fp32) {
        std::vector<float> out(a.size());
        fn(out.data(), a.data(), b.data(), a.size());
        for (std::size_t i = 0; i < a.size(); ++i) {
          float want = op == ReduceOp::prod ? a[i] * b[i]
                       : op == ReduceOp::max ? std::max(a[i], b[i])
                       : op == ReduceOp::min ? std::min(a[i], b[i])
                                             : a[i] + b[i];
          CHECK(out[i] == want);
        }
      } else {
        auto enc = [&](float f) { return dt == DType::fp16 ? float_to_fp16(f) : float_to_bf16(f); };
        auto dec = [&](std::uint16_t h) { return dt == DType::fp16 ? fp16_to_float(h) : bf16_to_float(h); };
        std::vector<std::uint16_t> x, y, out(a.size());
        for (std::size_t i = 0; i < a.size(); ++i) {
          x.push_back(enc(a[i]));
          y.push_back(enc(b[i]));
        }
        // In place, as Gloo calls it (out aliases the first input).
        out = x;
        fn(out.data(), out.data(), y.data(), a.size());
        for (std::size_t i = 0; i < a.size(); ++i) {
          float want = op == ReduceOp::prod ? dec(x[i]) * dec(y[i])
                       : op == ReduceOp::max ? std::max(dec(x[i]), dec(y[i]))
                       : op == ReduceOp::min ? std::min(dec(x[i]), dec(y[i]))
                                             : dec(x[i]) + dec(y[i]);
          CHECK(out[i] == enc(want));
        }
      }
    }
  }
}

TEST_CASE("avg scaling divides in float and rounds once", "[realexec][kernels]") {
  std::vector<float> f{12, 13, -7};
  scale_avg(f.data(), f.size(), DType::fp32, 4);
  CHECK(f[0] == 3.0f);
  CHECK(f[1] == 13.0f / 4.0f);
  CHECK(f[2] == -7.0f / 4.0f);
  std::vector<std::uint16_t> h{float_to_fp16(10), float_to_bf16(10)};
  scale_avg(h.data(), 1, DType::fp16, 3);
  CHECK(h[0] == float_to_fp16(10.0f / 3.0f));
  scale_avg(h.data() + 1, 1, DType::bf16, 3);
  CHECK(h[1] == float_to_bf16(10.0f / 3.0f));
  CHECK_THROWS_AS(reduce_function(DType::int32, ReduceOp::sum), std::invalid_argument);
}
