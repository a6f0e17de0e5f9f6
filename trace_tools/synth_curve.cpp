#include "trace_tools/synth_curve.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "core/join.h"
#include "core/trace_batch.h"

namespace redsim {

std::vector<std::int64_t> default_curve_batch_sizes(std::int64_t own) {
  std::vector<std::int64_t> sizes{own};
  for (std::int64_t p = 1; p <= 4 * own && p <= kMaxBatchSizePerRank; p *= 2)
    if (p * 256 >= own && p != own) sizes.push_back(p);
  std::sort(sizes.begin(), sizes.end());
  return sizes;
}

ModelTrace synthesize_with_curve(const SynthOptions& o, const std::vector<std::int64_t>& sizes, bool skip_unholdable) {
  ModelTrace t = synthesize_trace(o);
  std::vector<ModelTrace> others;
  for (const auto b : sizes) {
    if (b == o.batch_size_per_rank) continue;
    SynthOptions ob = o;
    ob.batch_size_per_rank = b;
    try {
      others.push_back(synthesize_trace(ob));
    } catch (const InputError&) {
      if (!skip_unholdable || b < o.batch_size_per_rank) throw;
    }
  }
  if (others.empty()) return t;
  // The roofline is exact at each point; --batch-size reads the straight line between them.
  attach_batch_curve(t, others);
  std::vector<std::string> listed;
  for (const auto b : t.curve_batch_sizes) listed.push_back(std::to_string(b));
  t.source += " Layer times also synthesised at batch sizes " + join(listed, ", ") + " per rank (curve_batch_sizes).";
  return t;
}

}  // namespace redsim
