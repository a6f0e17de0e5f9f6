// What the names in a PyTorch profiler (Kineto) trace say: NCCL kernel and CPU op names, the
// collective they run, the element type they carry. For the importer (kineto_import.h).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"

namespace redsim::kineto {

std::string lower(std::string_view s);
bool starts_with(std::string_view s, std::string_view prefix);

// "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)" -> the part before '('.
std::string_view kernel_base_name(std::string_view name);

// Collective kinds, normalised: "allreduce", "broadcast", "reducescatter", "allgather", "reduce",
// "sendrecv", "send", "recv", "alltoall", or "" when unknown.
std::string normalise_collective(std::string_view name);

// A CPU op that may carry a message size: record_param_comms, nccl:*, c10d::*, or a collective.
bool is_comm_op_name(std::string_view name);

struct DTypeGuess {
  std::optional<DType> dtype;
  bool integer = false;  // an integer type (maybe one redsim has no name for)
  bool known() const { return dtype.has_value() || integer; }
};

// Element type of an NCCL kernel from its name: ..._float, _half, _bf16/__nv_bfloat16, _f32 ...
DTypeGuess dtype_from_kernel_name(std::string_view name);
// c10 ScalarType names as Kineto writes them ("Float", "BFloat16", ...), the "Input type" names
// of record_shapes ("float", "c10::Half", ...), and redsim's own.
DTypeGuess dtype_from_text(std::string_view text);

// "3-7" for a consecutive run of more than two, "3, 5, 9" otherwise.
std::string join_numbers(const std::vector<std::int64_t>& v);

// "rank3.pt.trace.json.gz" -> "rank3": the model name when none is given.
std::string model_from_file(const std::string& file);

}  // namespace redsim::kineto
