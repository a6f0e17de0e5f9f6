// The checks `trace synth` makes: its options before it builds a trace, and the trace it built
// against the trace format's own limits, so that it never writes a file the reader refuses.
#pragma once
#include "core/trace.h"
#include "trace_tools/model_zoo.h"

namespace redsim {

// Throws InputError naming the option when one is out of range; max_seq_len is the model's
// position limit (0: a CNN, which takes no sequence length).
void check_synth_options(const SynthOptions& o, int max_seq_len);

// Throws InputError when `trace` falls outside what a trace file may hold (a layer over an hour,
// bytes past the reader's bounds): the options asked for more than the format describes.
void check_synthesised_trace(const ModelTrace& trace);

}  // namespace redsim
