#include "realexec/memory_bench.h"

#include <algorithm>
#include <memory>
#include <vector>

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

}  // namespace

HookCastMeasurement measure_hook_casts(Backend& backend, std::int64_t elements, int repetitions) {
  HookCastMeasurement m;
  m.elements = elements;
  std::vector<float> grad(static_cast<std::size_t>(elements), 1.0f);
  const float inv_world = 1.0f / static_cast<float>(std::max(1, backend.world_size()));
  backend.barrier();
  cast_round_trip(grad, inv_world);  // warm-up: first touch of the bucket
  std::vector<double> times;
  for (int r = 0; r < std::max(1, repetitions); ++r) {
    backend.barrier();
    times.push_back(cast_round_trip(grad, inv_world));
  }
  backend.barrier();
  std::sort(times.begin(), times.end());
  m.time_s = times[times.size() / 2];
  return m;
}

}  // namespace redsim::realexec
