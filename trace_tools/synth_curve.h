// `trace synth`'s batch curve: the model synthesised at several batch sizes and the layer times at
// each written as the trace's curve (traces/README.md, "Another batch size"), so a synthesised
// trace answers --batch-size and tune --samples-per-rank as a captured one does.
#pragma once
#include <cstdint>
#include <vector>

#include "core/trace.h"
#include "trace_tools/model_zoo.h"

namespace redsim {

// The batch sizes synth writes a curve at unless told: every power of two from own / 256 (at least
// 1) to 4 x own, and own itself, increasing. The roofline bends where a layer turns from
// memory-bound to compute-bound, which happens at small batches; the points reach down to 1 for
// the micro-batches of accumulation.
std::vector<std::int64_t> default_curve_batch_sizes(std::int64_t own);

// The trace synthesize_trace gives for `o`, with the layer times at every size of `sizes` (which
// holds o.batch_size_per_rank) as its batch curve; no curve when `sizes` is only that batch.
// Sizes above the trace's own that `skip_unholdable` allows to be skipped are left out when the
// trace format cannot hold them (bytes past its limits), as the default sizes are not asked for.
ModelTrace synthesize_with_curve(const SynthOptions& o, const std::vector<std::int64_t>& sizes, bool skip_unholdable);

}  // namespace redsim
