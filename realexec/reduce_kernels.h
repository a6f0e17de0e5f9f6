// Element-wise reductions for the wire dtypes (fp32, fp16, bf16) and the post-scaling of avg.
// Signature as Gloo's reduce functions: out[i] = a[i] (op) b[i]; out may alias a or b.
// fp16 and bf16 are reduced in float and rounded to nearest even once per call (one ring hop),
// which is exact for the small integers the executor fills buffers with.
#pragma once
#include <cstddef>

#include "core/collective_types.h"
#include "core/dtype.h"

namespace redsim::realexec {

using ReduceFn = void (*)(void* out, const void* a, const void* b, std::size_t n);

// The transport-level function for `op`: avg reduces with sum (divide afterwards with
// scale_avg). Throws std::invalid_argument for a dtype other than fp32/fp16/bf16.
ReduceFn reduce_function(DType dtype, ReduceOp op);

// buf[i] = buf[i] / world, computed in float and rounded back to the dtype.
void scale_avg(void* buf, std::size_t n, DType dtype, int world);

// Whether realexec can move and reduce this dtype (fp32, fp16, bf16).
bool wire_dtype_supported(DType dtype);

}  // namespace redsim::realexec
