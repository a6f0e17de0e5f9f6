// NCCL on CUDA devices (built only when CUDA and NCCL are found: REDSIM_HAVE_NCCL).
// One ncclComm_t per communicator, each on its own non-blocking CUDA stream, bootstrapped by
// passing rank 0's ncclUniqueId through the rendezvous store ("redsim/nccl/<name>"). Buffers are
// device memory. Every call enqueues the collective and waits for it by polling the stream,
// ncclCommGetAsyncError and the timeout (aborting the communicator on failure), so a lost peer
// ends the run instead of hanging it. Compute ops stay host busy-waits (see realexec/README.md).
#pragma once
#include <chrono>
#include <memory>
#include <string>

#include <gloo/rendezvous/store.h>

#include "realexec/backend.h"

namespace redsim::realexec {

struct NcclOptions {
  int local_rank = 0;  // device = local_rank % device count
  std::chrono::milliseconds timeout{60000};
};

// Throws BackendUnavailable (with CUDA's own words) when there is no usable CUDA device.
std::unique_ptr<Backend> make_nccl_backend(gloo::rendezvous::Store& store, int rank, int world_size,
                                           const NcclOptions& options);

// The number of CUDA devices, or -1 with the CUDA runtime's reason in *why (e.g. "CUDA driver
// version is insufficient for CUDA runtime version" on a machine without a GPU driver).
int cuda_device_count(std::string* why);

// NCCL's version code (e.g. 22809), available without a GPU.
int nccl_version_code();

}  // namespace redsim::realexec
