// A trace evaluated at another batch size per rank, from the layer times it measured at several
// (curve_batch_sizes; traces/README.md, "Another batch size"). Compute does not scale in
// proportion to the batch: every kernel has a fixed part, so a micro-batch of gradient
// accumulation costs more than its share. The curve carries that where a single time cannot.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/trace.h"

namespace redsim {

// The curve's value at `batch`: the straight line between the two measured batch sizes around it,
// and beyond the smallest or the largest the line of the nearest segment (a fixed part plus a
// per-sample part), never below 0. `batch_sizes` is increasing, with one time per entry.
double curve_time_s(const std::vector<std::int64_t>& batch_sizes, const std::vector<double>& times_s,
                    std::int64_t batch);

// `trace` with its layers' times for `batch` samples per rank and batch_size_per_rank = batch;
// activation and input bytes scale in proportion to the batch, the optimizer's time not at all.
// The curve is kept (with `batch` added to it). The trace's own batch returns it unchanged; another
// batch without a curve, or outside 1 to 2^24, is an InputError naming `file` and what to do.
ModelTrace trace_at_batch(const ModelTrace& trace, std::int64_t batch, const std::string& file);

// What to tell a user whose `batch` lies outside the batch sizes the trace's curve measured (its
// layer times extrapolated along an end segment's line, which can be far off: traces/README.md),
// or "" when it lies within them or is the trace's own.
std::string extrapolation_note(const ModelTrace& trace, std::int64_t batch);

// Reads a trace file and evaluates it at `batch` samples per rank (0: the trace's own), as
// --batch-size asks of simulate, tune, run and validate; `note`, when given, gets
// extrapolation_note's text for it.
ModelTrace load_trace_at(const std::string& file, std::int64_t batch, std::string* note = nullptr);

// Gives `trace` a batch curve from traces of the same model at other batch sizes (the same layers in
// the same order; std::invalid_argument otherwise): curve_batch_sizes is its own batch and theirs,
// increasing, and each layer's times at each.
void attach_batch_curve(ModelTrace& trace, const std::vector<ModelTrace>& others);

// "--batch-sizes 8,16": comma-separated batch sizes per rank, each 1 to 2^24, with `own` added;
// increasing, at least two and at most 16 (each is a whole capture or synthesis). InputError otherwise.
std::vector<std::int64_t> parse_batch_sizes(const std::string& text, std::int64_t own);

}  // namespace redsim
