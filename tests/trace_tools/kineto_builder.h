// Builds small PyTorch profiler (Kineto) Chrome traces of a data-parallel step for the import
// tests: the events Kineto writes for a DDP job on NCCL (ProfilerStep#N spans, CPU ops on the
// main and autograd threads, cudaLaunchKernel runtime events, kernels on a compute stream and
// NCCL kernels on a communication stream, linked by correlation ids), from a scenario whose
// kernels, launches and message sizes the test states.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace redsim::testing {

enum class KPhase { forward, backward, optimizer };

struct KCompute {
  double launch_us = 0, start_us = 0, dur_us = 0;  // from the step's start
  KPhase phase = KPhase::backward;
  int id = -1;  // the kernel's name suffix: equal ids are the same kernel (default: its index in the step)
};

struct KComm {
  double launch_us = 0, start_us = 0, dur_us = 0;
  std::string collective = "allreduce";  // or "broadcast"
  std::int64_t numel = 0;
  std::string dtype = "Float";  // c10 ScalarType name, as Kineto writes it
  KPhase phase = KPhase::backward;
  int channels = 0;  // the NCCL kernel's grid x, one block per channel; 0: the kernel has no grid arg
};

// One "[memory]" event (profile_memory=True): an allocation (bytes > 0) or a free, on the host's
// clock, by the allocator of a device (c10::DeviceType 1 CUDA, 0 CPU).
struct KMemory {
  double ts_us = 0;  // from the step's start; negative: before its ProfilerStep span
  std::int64_t bytes = 0;
  int device_type = 1;
  int device_id = 0;
};

struct KStep {
  std::int64_t number = 0;
  double length_us = 3000;
  std::vector<KCompute> compute;
  std::vector<KComm> comm;
  std::vector<KMemory> memory;  // in time order; "Total Allocated" is their running sum per device
  // Host ops on the autograd thread (with launches only): autograd's AccumulateGrad, one per
  // gradient tensor, at accumulate_at_us, besides the one around each backward allreduce's launch
  // (DDP's hook fires in the AccumulateGrad of a bucket's last gradient); DDP's copy_bucket_to_grad,
  // one per tensor copied back out of its bucket, at copy_out_at_us (1 ns apart, 0.5 ns long: they
  // enclose no launch).
  int accumulate_grads = 0, copies_out = 0;
  double accumulate_at_us = 520, copy_out_at_us = 1975;
};

// Where the message sizes are: on the NCCL kernel's args (PyTorch >= 2.1), on the
// record_param_comms CPU op, as record_shapes' Input Dims of nccl:all_reduce (PyTorch 1.13), or
// nowhere.
enum class SizeStyle { kernel_args, record_param_comms, input_dims, none };

struct KBuild {
  SizeStyle sizes = SizeStyle::kernel_args;
  bool launches = true;        // cuda_runtime events and CPU ops; false: GPU activity only
  bool profiler_steps = true;  // ProfilerStep#N spans
  int group_size = 8;
  int rank = 3;
  std::string device_name = "NVIDIA H100 80GB HBM3";
  double base_us = 1.7e12;  // absolute time of the first step, as Kineto's epoch-based clock
  bool total_allocated = true;  // memory events carry "Total Allocated" (false: "Bytes" only)
};

// With launches, each step's Optimizer.step#SGD.step CPU op opens this long before the launch of
// its first optimizer kernel (the host's work before it) and closes 20 us after its last.
inline constexpr double kOptimizerOpLeadUs = 5;

nlohmann::json build_kineto(const std::vector<KStep>& steps, const KBuild& options);

// The scenario the tests use: 3 forward kernels, a buffer broadcast, 6 backward kernels, 3
// gradient allreduces (1 MiB, 25 MiB and 4000 bytes of fp32), 2 optimizer kernels. `jitter`
// shifts every kernel by 3*jitter us and lengthens it by jitter us (a different step).
KStep example_step(std::int64_t number, int jitter);

// The index of the first event of a built trace that `pred` holds for; throws std::logic_error
// when there is none.
std::size_t index_of_first(const nlohmann::json& trace, const std::function<bool(const nlohmann::json&)>& pred);
bool is_kernel(const nlohmann::json& event);

// NCCL kernel names as PyTorch's NCCL builds name them.
std::string nccl_kernel_name(const std::string& collective, const std::string& dtype);

}  // namespace redsim::testing
