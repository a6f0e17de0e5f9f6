#include "realexec/reduce_kernels.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "realexec/half.h"

namespace redsim::realexec {
namespace {

struct Sum {
  static float apply(float x, float y) { return x + y; }
};
struct Prod {
  static float apply(float x, float y) { return x * y; }
};
struct Max {
  static float apply(float x, float y) { return x < y ? y : x; }
};
struct Min {
  static float apply(float x, float y) { return y < x ? y : x; }
};

// fp32: plain loops the compiler vectorises (Release builds are -O3).
template <class Op>
void reduce_f32(void* out, const void* a, const void* b, std::size_t n) {
  auto* o = static_cast<float*>(out);
  const auto* x = static_cast<const float*>(a);
  const auto* y = static_cast<const float*>(b);
  for (std::size_t i = 0; i < n; ++i) o[i] = Op::apply(x[i], y[i]);
}

template <class Op, float (*ToF)(std::uint16_t), std::uint16_t (*FromF)(float)>
void reduce_16(void* out, const void* a, const void* b, std::size_t n) {
  auto* o = static_cast<std::uint16_t*>(out);
  const auto* x = static_cast<const std::uint16_t*>(a);
  const auto* y = static_cast<const std::uint16_t*>(b);
  for (std::size_t i = 0; i < n; ++i) o[i] = FromF(Op::apply(ToF(x[i]), ToF(y[i])));
}

template <class Op>
ReduceFn pick(DType dtype) {
  switch (dtype) {
    case DType::fp32:
      return &reduce_f32<Op>;
    case DType::fp16:
      return &reduce_16<Op, fp16_to_float, float_to_fp16>;
    case DType::bf16:
      return &reduce_16<Op, bf16_to_float, float_to_bf16>;
    default:
      throw std::invalid_argument("realexec reduces fp32, fp16 and bf16 only, not " + std::string(dtype_name(dtype)));
  }
}

}  // namespace

bool wire_dtype_supported(DType dtype) {
  return dtype == DType::fp32 || dtype == DType::fp16 || dtype == DType::bf16;
}

ReduceFn reduce_function(DType dtype, ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg:
      return pick<Sum>(dtype);
    case ReduceOp::prod:
      return pick<Prod>(dtype);
    case ReduceOp::max:
      return pick<Max>(dtype);
    case ReduceOp::min:
      return pick<Min>(dtype);
  }
  throw std::invalid_argument("unknown reduce op");
}

void scale_avg(void* buf, std::size_t n, DType dtype, int world) {
  const float w = static_cast<float>(world);
  switch (dtype) {
    case DType::fp32: {
      auto* p = static_cast<float*>(buf);
      for (std::size_t i = 0; i < n; ++i) p[i] = p[i] / w;
      return;
    }
    case DType::fp16: {
      auto* p = static_cast<std::uint16_t*>(buf);
      for (std::size_t i = 0; i < n; ++i) p[i] = float_to_fp16(fp16_to_float(p[i]) / w);
      return;
    }
    case DType::bf16: {
      auto* p = static_cast<std::uint16_t*>(buf);
      for (std::size_t i = 0; i < n; ++i) p[i] = float_to_bf16(bf16_to_float(p[i]) / w);
      return;
    }
    default:
      throw std::invalid_argument("realexec reduces fp32, fp16 and bf16 only, not " + std::string(dtype_name(dtype)));
  }
}

}  // namespace redsim::realexec
