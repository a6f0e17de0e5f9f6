#include "strategies/checkpointing.h"

#include <algorithm>
#include <cctype>

#include "core/error.h"

namespace redsim {
namespace {

}  // namespace

std::string block_of_layer_name(const std::string& name) {
  std::size_t start = 0;
  while (start <= name.size()) {
    const std::size_t dot = std::min(name.find('.', start), name.size());
    const bool digits = dot > start && std::all_of(name.begin() + static_cast<std::ptrdiff_t>(start),
                                                   name.begin() + static_cast<std::ptrdiff_t>(dot),
                                                   [](unsigned char c) { return std::isdigit(c) != 0; });
    if (digits) return name.substr(0, dot);
    start = dot + 1;
  }
  return "";
}

namespace {

void require_bytes(const ModelTrace& trace) {
  const auto& l = trace.layers.front();
  if (!l.activation_bytes || !l.input_bytes)
    throw InputError("", "", std::string("--activation-checkpointing blocks: the trace gives no ") +
                                 (!l.activation_bytes ? "activation_bytes" : "input_bytes") +
                                 " for its layers (capture it with redsim_capture.py or make it with trace synth)");
}

}  // namespace

Checkpointing checkpoint_blocks(const ModelTrace& trace, const Knobs& knobs) {
  if (knobs.checkpointed_blocks > 0 && knobs.activation_checkpointing != ActivationCheckpointing::blocks)
    throw InputError("", "", "--checkpointed-blocks " + std::to_string(knobs.checkpointed_blocks) +
                                 ": needs --activation-checkpointing blocks");
  return checkpoint_blocks(trace, knobs.activation_checkpointing, knobs.checkpointed_blocks);
}

Checkpointing checkpoint_blocks(const ModelTrace& trace, ActivationCheckpointing mode, int first_blocks) {
  Checkpointing c;
  c.block_of_layer.assign(trace.layers.size(), -1);
  if (mode == ActivationCheckpointing::none || trace.layers.empty()) return c;
  require_bytes(trace);
  std::string open;
  for (std::size_t l = 0; l < trace.layers.size(); ++l) {
    const auto& layer = trace.layers[l];
    const std::string prefix = block_of_layer_name(layer.name);
    if (prefix.empty()) {
      open.clear();
      continue;
    }
    if (prefix != open) {
      c.blocks.push_back({prefix, l, l, *layer.input_bytes, 0, 0});
      open = prefix;
    }
    auto& b = c.blocks.back();
    b.last_layer = l;
    b.recompute_bytes += *layer.activation_bytes;
    b.forward_s += layer.forward_s;
    c.block_of_layer[l] = static_cast<int>(c.blocks.size() - 1);
  }
  if (c.blocks.empty())
    throw InputError("", "", "--activation-checkpointing blocks: no layer of the trace belongs to a repeated block "
                             "(a name with a numeric component, e.g. model.layers.7.mlp)");
  if (first_blocks > 0) {
    if (static_cast<std::size_t>(first_blocks) > c.blocks.size())
      throw InputError("", "", "--checkpointed-blocks " + std::to_string(first_blocks) + ": the trace has " +
                                   std::to_string(c.blocks.size()) + " repeated blocks");
    c.blocks.resize(static_cast<std::size_t>(first_blocks));
    for (auto& b : c.block_of_layer)
      if (b >= first_blocks) b = -1;
  }
  // A first layer that saves its input (a norm, a linear layer, a convolution) keeps the block's
  // input storage, which the checkpoint already holds: counted once.
  for (auto& b : c.blocks)
    b.recompute_bytes -= std::min(b.input_bytes, *trace.layers[b.first_layer].activation_bytes);
  return c;
}

const CheckpointBlock* Checkpointing::block_ending_at(std::size_t l) const {
  const int b = l < block_of_layer.size() ? block_of_layer[l] : -1;
  return b >= 0 && blocks[static_cast<std::size_t>(b)].last_layer == l ? &blocks[static_cast<std::size_t>(b)] : nullptr;
}

bool names_blocks(const ModelTrace& trace) {
  for (const auto& l : trace.layers)
    if (!block_of_layer_name(l.name).empty()) return true;
  return false;
}

bool can_checkpoint(const ModelTrace& trace) {
  if (trace.layers.empty() || !trace.layers.front().activation_bytes || !trace.layers.front().input_bytes) return false;
  return names_blocks(trace);
}

std::int64_t Checkpointing::forward_held_bytes(const ModelTrace& trace, std::size_t l) const {
  const int b = block_of_layer.empty() ? -1 : block_of_layer[l];
  if (b < 0) return trace.layers[l].activation_bytes.value_or(0);
  return blocks[static_cast<std::size_t>(b)].first_layer == l ? blocks[static_cast<std::size_t>(b)].input_bytes : 0;
}

std::int64_t Checkpointing::backward_freed_bytes(const ModelTrace& trace, std::size_t l) const {
  const int b = block_of_layer.empty() ? -1 : block_of_layer[l];
  const std::int64_t own = trace.layers[l].activation_bytes.value_or(0);
  if (b < 0) return own;
  const auto& block = blocks[static_cast<std::size_t>(b)];
  if (l != block.first_layer) return own;
  // The first layer frees its own activations less the input it shares with the checkpoint,
  // then the checkpoint's input.
  return own - std::min(block.input_bytes, own) + block.input_bytes;
}

std::int64_t activation_peak_bytes(const ModelTrace& trace, const Checkpointing& ckpt) {
  std::int64_t held = 0, peak = 0;
  for (std::size_t l = 0; l < trace.layers.size(); ++l) held += ckpt.forward_held_bytes(trace, l);
  peak = held;
  for (std::size_t l = trace.layers.size(); l-- > 0;) {
    if (const auto* b = ckpt.block_ending_at(l)) {
      held += b->recompute_bytes;
      peak = std::max(peak, held);
    }
    held -= ckpt.backward_freed_bytes(trace, l);
  }
  return peak;
}

}  // namespace redsim
