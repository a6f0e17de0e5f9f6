#include "realexec/memory_bench.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <gloo/math.h>
#include <gloo/types.h>

#include "realexec/clock.h"
#include "realexec/half.h"

namespace redsim::realexec {
namespace {

volatile float g_cast_sink = 0;  // keeps the casts from being optimised away

// One hook call on `grad`: a new fp16 tensor (fresh memory, as PyTorch allocates it), then the
// decompressed values written back into the bucket.
double cast_round_trip(std::vector<float>& grad, float inv_world) {
  const double t0 = now_s();
  const std::size_t n = grad.size();
  std::unique_ptr<std::uint16_t[]> half(new std::uint16_t[n]);
  for (std::size_t i = 0; i < n; ++i) half[i] = float_to_fp16(grad[i] * inv_world);
  for (std::size_t i = 0; i < n; ++i) grad[i] = fp16_to_float(half[i]);
  g_cast_sink = g_cast_sink + grad[n / 2];
  return now_s() - t0;
}

// Every rank at once, after a barrier each time; rank 0's median.
template <typename F>
double median_every_rank(Backend& backend, int repetitions, F&& once) {
  backend.barrier();
  once();  // warm-up: first touch of the buffers
  std::vector<double> times;
  for (int r = 0; r < std::max(1, repetitions); ++r) {
    backend.barrier();
    times.push_back(once());
  }
  backend.barrier();
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

HookCastMeasurement measure_hook_casts(Backend& backend, std::int64_t elements, int repetitions) {
  HookCastMeasurement m;
  m.elements = elements;
  std::vector<float> grad(static_cast<std::size_t>(elements), 1.0f);
  const float inv_world = 1.0f / static_cast<float>(std::max(1, backend.world_size()));
  m.time_s = median_every_rank(backend, repetitions, [&] { return cast_round_trip(grad, inv_world); });
  return m;
}

CopyMeasurement measure_fp32_add(Backend& backend, std::int64_t elements, int repetitions) {
  CopyMeasurement m;
  m.elements = elements;
  const auto n = static_cast<std::size_t>(elements);
  // Values that stay finite however often they are added: 2^-20 grows to 1 in 2^20 additions.
  std::vector<float> acc(n, 0.0f), in(n, 1.0f / 1048576);
  m.time_s = median_every_rank(backend, repetitions, [&] {
    const double t0 = now_s();
    for (std::size_t i = 0; i < n; ++i) acc[i] += in[i];
    g_cast_sink = g_cast_sink + acc[n / 2];
    return now_s() - t0;
  });
  return m;
}

FreshCopyMeasurement measure_fresh_copy(Backend& backend, std::int64_t elements, int repetitions) {
  FreshCopyMeasurement m;
  m.elements = elements;
  const auto n = static_cast<std::size_t>(elements);
  const std::vector<float> in(n, 1.0f);
  const std::size_t bytes = n * sizeof(float);
  m.time_s = median_every_rank(backend, repetitions, [&] {
    const double t0 = now_s();
    // mmap as glibc's malloc does over its threshold: no huge pages unless the process asks.
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("mmap of " + std::to_string(bytes) + " bytes: " + std::strerror(errno));
    auto* out = static_cast<float*>(p);
    std::copy(in.begin(), in.end(), out);
    g_cast_sink = g_cast_sink + out[n / 2];
    ::munmap(p, bytes);
    return now_s() - t0;
  });
  return m;
}

ReduceMeasurement measure_fp16_reduce(Backend& backend, std::int64_t elements, int repetitions) {
  ReduceMeasurement m;
  m.elements = elements;
  const auto n = static_cast<std::size_t>(elements);
  // Values that stay finite however often they are summed: 2^-14 grows to 1 in 2^14 additions.
  std::vector<gloo::float16> acc(n, gloo::cpu_float2half_rn(0.0f)), in(n, gloo::cpu_float2half_rn(1.0f / 16384));
  m.time_s = median_every_rank(backend, repetitions, [&] {
    const double t0 = now_s();
    gloo::sum<gloo::float16>(acc.data(), in.data(), n);
    g_cast_sink = g_cast_sink + gloo::cpu_half2float(acc[n / 2]);
    return now_s() - t0;
  });
  return m;
}

}  // namespace redsim::realexec
